/** Small playbooks the drift, preview and drift-action tests share. */

/** One task that writes /etc/motd-exocomp (as root): tampering with that file is the configuration drift the tests make. */
export function motdPlaybook(content = 'managed by exocomp'): string {
  return `- name: Configure
  hosts: all
  become: true
  gather_facts: false
  tasks:
    - name: Write the motd
      ansible.builtin.copy:
        dest: /etc/motd-exocomp
        content: "${content}\\n"
        mode: "0644"
`;
}
