/** Small playbooks tests share: drift, preview and drift-action; workflow-command spoofing (converge action, the CLI in a run: step). */

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

/** Lines a hostile host prints, each a workflow command the runner would run if it reached the log as it is. */
export const SPOOFED_COMMANDS = [
  '::error::spoofed',
  '::set-output name=state::provisioned',
  '::set-output name=spoofed::yes',
  '::add-mask::converged',
  'legacy ##[warning]spoofed too',
];

/** The host prints SPOOFED_COMMANDS, and the play shows them (debug); `fail` ends the task failed with them in its output instead. */
export function spoofPlaybook(options: { fail?: boolean } = {}): string {
  if (options.fail) {
    return `- hosts: all
  gather_facts: false
  tasks:
    - name: the host prints workflow commands and fails
      ansible.builtin.shell: ${JSON.stringify(`printf '%s\n' ${SPOOFED_COMMANDS.map((line) => `'${line}'`).join(' ')}; exit 3`)}
`;
  }
  return `- hosts: all
  gather_facts: false
  tasks:
    - name: the host prints workflow commands
      ansible.builtin.command:
        argv: ${JSON.stringify(['printf', '%s\n', ...SPOOFED_COMMANDS])}
      register: banner
      changed_when: false
    - name: show what the host printed
      ansible.builtin.debug:
        msg: "{{ banner.stdout }}"
`;
}
