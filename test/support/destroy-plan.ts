/**
 * A workspace for the destroy guard end to end: applied with hosts web1 and
 * web2 (tf:<name> names both), then changed so its next plan replaces web1
 * (its image is a replace trigger) and destroys web2. The tofu stand-in plans
 * it; nothing reaches a host.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';

function config(hosts: readonly string[], web1Image: string) {
  return {
    variable: { ansible_inventory: { type: 'any' } },
    resource: {
      terraform_data: Object.fromEntries(
        hosts.map((host) => [host, host === 'web1' ? { input: host, triggers_replace: web1Image } : { input: host }]),
      ),
    },
    output: { ansible_inventory: { value: '${var.ansible_inventory}' } },
  };
}

async function write(workspace: string, hosts: readonly string[], web1Image: string): Promise<void> {
  await writeFile(join(workspace, 'main.tf.json'), JSON.stringify(config(hosts, web1Image)));
  const inventory = {
    all: { hosts: Object.fromEntries(hosts.map((h) => [h, { ansible_host: `127.0.9.${h.slice(-1)}` }])) },
  };
  await writeFile(join(workspace, 'exocomp.auto.tfvars.json'), JSON.stringify({ ansible_inventory: inventory }));
}

/** The state to apply first: web1 and web2. */
export const twoHosts = (workspace: string) => write(workspace, ['web1', 'web2'], 'img-1');

/** The change under review: web1 replaced (a new image), web2 gone. */
export const replaceWeb1DestroyWeb2 = (workspace: string) => write(workspace, ['web1'], 'img-2');
