import { describe, expect, it } from 'vitest';
import { secretPlacesIn } from '../../src/domain/standing-inventory.js';
import { SecretRegistry } from '../../src/app/runtime/secrets.js';

const SECRET = 'hunter2-correct-horse-battery';

describe('secretPlacesIn: where a secret sits in an inventory, never what it is', () => {
  const registry = new SecretRegistry();
  registry.add(SECRET);
  const exposes = (text: string) => registry.exposes(text);

  it('names each value holding a secret in any form by its dotted path', () => {
    const inventory = {
      all: {
        vars: { banner: `welcome ${Buffer.from(SECRET).toString('base64')}` },
        hosts: { web1: { ansible_host: '10.0.0.1', db_password: SECRET }, web2: { ansible_host: '10.0.0.2' } },
      },
    };
    const places = secretPlacesIn(inventory, exposes);
    expect(places).toEqual(['all.vars.banner', 'all.hosts.web1.db_password']);
    expect(places.join(' ')).not.toContain(SECRET);
  });

  it('names the mapping whose key holds a secret, and nothing for a clean inventory', () => {
    expect(secretPlacesIn({ all: { hosts: { [SECRET]: {} } } }, exposes)).toEqual(['a key under all.hosts']);
    expect(secretPlacesIn({ all: { hosts: { web1: { ansible_port: 22 } } } }, exposes)).toEqual([]);
  });
});
