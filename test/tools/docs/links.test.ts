/**
 * The README and docs/ are read by people who cloned the repository, offline or not: every link points to a file
 * inside it (and to a heading of it that exists), and nothing GitHub would turn into a link leaves it.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../../..');
const PAGES = [
  'README.md',
  ...readdirSync(path.join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];

/** The page's text outside fenced code blocks and inline code spans, where markdown makes no links. */
function prose(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/(`+)[\s\S]*?\1/g, '');
}

/** Every inline link and image target of a page: `[text](target)`, `![alt](target)`, and reference definitions. */
function linkTargets(markdown: string): string[] {
  const text = prose(markdown);
  const inline = [...text.matchAll(/!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!);
  const references = [...text.matchAll(/^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$/gm)].map((m) => m[1]!);
  return [...inline, ...references];
}

/** The paths among `files` (absolute) that git ignores, so that a clone would not have them (node_modules/, out/…). */
function ignored(files: readonly string[]): string[] {
  if (files.length === 0) return [];
  try {
    return execFileSync('git', ['check-ignore', '--no-index', ...files], { cwd: ROOT, encoding: 'utf8' })
      .split('\n')
      .filter((line) => line !== '');
  } catch (error) {
    // git check-ignore exits 1 when it ignores none of them.
    if ((error as { status?: number }).status === 1) return [];
    throw error;
  }
}

/** GitHub's anchor of each heading of a page (lower case, punctuation dropped, spaces to '-', repeats numbered). */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  const text = markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
  for (const [, title] of text.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = title!
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    result.add(count === 0 ? base : `${base}-${count}`);
  }
  return result;
}

describe.each(PAGES)('%s', (page) => {
  const markdown = readFileSync(path.join(ROOT, page), 'utf8');
  const targets = linkTargets(markdown);

  it('links only to relative paths, never to a site or outside the repository', () => {
    const outward = targets.filter((target) => /^[a-z][a-z0-9+.-]*:|^\/\//i.test(target) || target.startsWith('/'));
    const escaping = targets.filter((target) => {
      const file = target.split('#')[0]!;
      return (
        file !== '' && path.relative(ROOT, path.resolve(ROOT, path.dirname(page), decodeURI(file))).startsWith('..')
      );
    });
    expect({ outward, escaping }).toEqual({ outward: [], escaping: [] });
  });

  it('links to files that exist, and to headings that exist', () => {
    const broken = targets
      .filter((target) => !/^[a-z][a-z0-9+.-]*:|^\/\//i.test(target))
      .filter((target) => {
        const [file = '', anchor] = target.split('#');
        const resolved = file === '' ? path.join(ROOT, page) : path.resolve(ROOT, path.dirname(page), decodeURI(file));
        if (!existsSync(resolved)) return true;
        if (anchor === undefined || !resolved.endsWith('.md') || statSync(resolved).isDirectory()) return false;
        return !anchors(readFileSync(resolved, 'utf8')).has(decodeURIComponent(anchor));
      });
    expect(broken).toEqual([]);
  });

  it('links to no file a clone would lack (git-ignored)', () => {
    const files = targets
      .filter((target) => !/^[a-z][a-z0-9+.-]*:|^\/\//i.test(target) && !target.startsWith('#'))
      .map((target) => path.resolve(ROOT, path.dirname(page), decodeURI(target.split('#')[0]!)));
    expect(ignored(files).map((file) => path.relative(ROOT, file))).toEqual([]);
  });

  it('holds no bare web address GitHub would turn into a link', () => {
    expect(prose(markdown).match(/\b(?:https?:\/\/|www\.)\S+/g) ?? []).toEqual([]);
  });
});
