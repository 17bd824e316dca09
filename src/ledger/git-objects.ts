/**
 * The git objects a ledger write creates, built as bytes here so that every
 * tree is checked before git sees it: no empty, `.`, `..` or `.git` entry
 * (in any case), no `/`, NUL or control character inside a name. Git and
 * GitHub's receiving side refuse such trees (fsck `hasDot`, `hasDotdot`,
 * `hasDotgit`, `fullPathname`); the ledger must never push one.
 */
import { createHash } from 'node:crypto';
import { deflateSync } from 'node:zlib';
import { ExocompError } from '../domain/errors.js';

export const EMPTY_TREE_ID = '4b825dc642cb6eb9a060e54bf8d69288fbee4904';

export interface BlobEntry {
  /** `100644` or `100755`. */
  mode: string;
  id: string;
}

export interface TreeObject {
  id: string;
  bytes: Buffer;
}

/** Says why `name` cannot be a tree entry, or undefined when it can. */
export function treeEntryNameProblem(name: string): string | undefined {
  if (name === '') return 'an empty name';
  if (name === '.' || name === '..') return `the name ${JSON.stringify(name)}`;
  if (name.toLowerCase() === '.git') return 'the name ".git"';
  if (name.includes('/')) return 'a "/" inside a name';
  // eslint-disable-next-line no-control-regex -- a control character in a name is what is refused
  if (/[\u0000-\u001f\u007f\\]/.test(name)) return 'a control character or backslash inside a name';
  return undefined;
}

export function objectId(type: 'blob' | 'tree' | 'commit', body: Buffer): string {
  return createHash('sha1').update(`${type} ${body.length}\0`).update(body).digest('hex');
}

/** Git orders tree entries by name, comparing a subtree's name as if it ended in "/". */
function entrySortKey(name: string, isTree: boolean): Buffer {
  return Buffer.from(isTree ? `${name}/` : name, 'utf8');
}

/**
 * The trees holding `files` (ledger path → blob), deepest first, and the root
 * tree's id. An empty file set gives the empty tree.
 */
export function buildTrees(files: ReadonlyMap<string, BlobEntry>): { root: string; trees: TreeObject[] } {
  interface Folder {
    blobs: Map<string, BlobEntry>;
    folders: Map<string, Folder>;
  }
  const root: Folder = { blobs: new Map(), folders: new Map() };
  for (const [path, blob] of files) {
    const segments = path.split('/');
    let folder = root;
    segments.forEach((segment, index) => {
      const problem = treeEntryNameProblem(segment);
      if (problem !== undefined) {
        throw new ExocompError(
          'internal',
          `refusing to write the ledger path ${JSON.stringify(path)}: its tree would hold ${problem}`,
          {
            help: 'this is a bug in exocomp; nothing was written',
          },
        );
      }
      if (index === segments.length - 1) {
        if (folder.folders.has(segment)) throw clash(path);
        folder.blobs.set(segment, blob);
      } else {
        if (folder.blobs.has(segment)) throw clash(path);
        let next = folder.folders.get(segment);
        if (!next) {
          next = { blobs: new Map(), folders: new Map() };
          folder.folders.set(segment, next);
        }
        folder = next;
      }
    });
  }
  const trees: TreeObject[] = [];
  const write = (folder: Folder): string => {
    const entries: { key: Buffer; bytes: Buffer }[] = [];
    for (const [name, sub] of folder.folders) {
      const id = write(sub);
      entries.push({
        key: entrySortKey(name, true),
        bytes: Buffer.concat([Buffer.from(`40000 ${name}\0`, 'utf8'), Buffer.from(id, 'hex')]),
      });
    }
    for (const [name, blob] of folder.blobs) {
      entries.push({
        key: entrySortKey(name, false),
        bytes: Buffer.concat([Buffer.from(`${blob.mode} ${name}\0`, 'utf8'), Buffer.from(blob.id, 'hex')]),
      });
    }
    entries.sort((a, b) => Buffer.compare(a.key, b.key));
    const bytes = Buffer.concat(entries.map((entry) => entry.bytes));
    const id = objectId('tree', bytes);
    if (!trees.some((tree) => tree.id === id)) trees.push({ id, bytes });
    return id;
  };
  return { root: write(root), trees };
}

function clash(path: string): ExocompError {
  return new ExocompError('internal', `ledger path ${path} would be both a file and a folder`, {
    help: 'this is a bug in exocomp; nothing was written',
  });
}

export interface CommitFields {
  tree: string;
  parents: readonly string[];
  name: string;
  email: string;
  when: Date;
  message: string;
}

export function commitBytes(fields: CommitFields): Buffer {
  const seconds = Math.floor(fields.when.getTime() / 1000);
  const person = `${fields.name} <${fields.email}> ${seconds} +0000`;
  const message = fields.message.endsWith('\n') ? fields.message : `${fields.message}\n`;
  return Buffer.from(
    [
      `tree ${fields.tree}`,
      ...fields.parents.map((parent) => `parent ${parent}`),
      `author ${person}`,
      `committer ${person}`,
      '',
      message,
    ].join('\n'),
    'utf8',
  );
}

export interface LooseObject {
  type: 'blob' | 'tree' | 'commit';
  bytes: Buffer;
}

const PACK_TYPE_CODES = { commit: 1, tree: 2, blob: 3 } as const;

/**
 * A version 2 packfile holding `objects` whole (no deltas), so that one
 * `git unpack-objects` writes blobs, trees and commits together: one process
 * per ledger write instead of one `hash-object` per object type. Git hashes
 * the very bytes given here, so each object lands under the id objectId gives.
 */
export function packOf(objects: readonly LooseObject[]): Buffer {
  const header = Buffer.alloc(12);
  header.write('PACK', 0, 'latin1');
  header.writeUInt32BE(2, 4);
  header.writeUInt32BE(objects.length, 8);
  const parts: Buffer[] = [header];
  for (const { type, bytes } of objects) {
    // Type and size: 3 bits of type and the size's low 4 bits, then 7 bits a byte, high bit = more follows.
    let size = bytes.length;
    const sizeBytes = [(PACK_TYPE_CODES[type] << 4) | (size & 0x0f)];
    size = Math.floor(size / 16);
    while (size > 0) {
      sizeBytes[sizeBytes.length - 1]! |= 0x80;
      sizeBytes.push(size & 0x7f);
      size = Math.floor(size / 128);
    }
    parts.push(Buffer.from(sizeBytes), deflateSync(bytes));
  }
  const body = Buffer.concat(parts);
  return Buffer.concat([body, createHash('sha1').update(body).digest()]);
}
