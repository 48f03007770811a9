/**
 * The prose budgets of STYLE.md, held by a test rather than a hook: each document has one job,
 * and a size past its budget means it has taken on another. Sizes in KB of 1,000 bytes.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '..');
const KB = 1000;
/** Commits before this one were written before the budget on subjects was agreed. */
const firstBudgetedParent = '6a60e20';

const bytesOf = (file: string) => statSync(path.join(root, file)).size;
const read = (file: string) => readFileSync(path.join(root, file), 'utf8');

/**
 * The files under a folder that a commit would hold (tracked, or new and not ignored), as paths
 * relative to the root: a profiler's dump that .gitignore keeps out counts in no budget.
 */
function filesUnder(folder: string, suffix = ''): string[] {
  const listed = execFileSync(
    'git',
    ['ls-files', '-z', '--cached', '--others', '--exclude-standard', '--', folder],
    { cwd: root, encoding: 'utf8' },
  );
  return listed
    .split('\0')
    .filter((file) => file !== '' && file.endsWith(suffix) && existsSync(path.join(root, file)));
}

/** The CHANGELOG's release sections (`## ...` up to the next one), by heading. */
function changelogSections(): Array<{ heading: string; bytes: number }> {
  const parts = read('CHANGELOG.md')
    .split(/^(?=## )/m)
    .slice(1);
  return parts.map((part) => ({
    heading: part.slice(0, part.indexOf('\n')),
    bytes: Buffer.byteLength(part),
  }));
}

/** A citation of one of our own issues: "#35", "issue 35"; `owner/repo#35` names another's. */
const citesOurIssue = (text: string) =>
  /(?<![\w/.-])#\d+\b/.test(text) || /\bissues?\s+#?\d+\b/i.test(text);

/** The comments of a TypeScript file, found by the compiler's own scanner. */
function commentsOf(source: string): string[] {
  const scanner = ts.createScanner(ts.ScriptTarget.Latest, false, ts.LanguageVariant.Standard);
  scanner.setText(source);
  const comments: string[] = [];
  for (let kind = scanner.scan(); kind !== ts.SyntaxKind.EndOfFileToken; kind = scanner.scan()) {
    if (
      kind === ts.SyntaxKind.SingleLineCommentTrivia ||
      kind === ts.SyntaxKind.MultiLineCommentTrivia
    ) {
      comments.push(scanner.getTokenText());
    }
  }
  return comments;
}

/** Subjects of the commits since the budget began, or undefined in a clone without them. */
function newCommitSubjects(): string[] | undefined {
  const git = (...args: string[]) => execFileSync('git', args, { cwd: root, encoding: 'utf8' });
  try {
    git('cat-file', '-e', `${firstBudgetedParent}^{commit}`);
  } catch {
    return undefined;
  }
  return git('log', '--format=%s', `${firstBudgetedParent}..HEAD`).split('\n').filter(Boolean);
}

describe('prose budgets', () => {
  it('README.md is at most 20 KB', () => {
    expect(bytesOf('README.md')).toBeLessThanOrEqual(20 * KB);
  });

  it('bench/README.md is at most 15 KB', () => {
    expect(bytesOf('bench/README.md')).toBeLessThanOrEqual(15 * KB);
  });

  it('bench/results holds at most 8 files', () => {
    expect(filesUnder('bench/results').length).toBeLessThanOrEqual(8);
  });

  it('no CHANGELOG section is over 8 KB', () => {
    const over = changelogSections().filter((section) => section.bytes > 8 * KB);
    expect(over).toEqual([]);
  });

  it('docs/ holds at most 150 KB in all', () => {
    const sizes = filesUnder('docs').map((file) => `${file} ${bytesOf(file)}`);
    const total = filesUnder('docs').reduce((sum, file) => sum + bytesOf(file), 0);
    expect(total, sizes.join('\n')).toBeLessThanOrEqual(150 * KB);
  });

  it('no design note cites an issue number', () => {
    const citing = filesUnder('docs/design').filter((file) => citesOurIssue(read(file)));
    expect(citing).toEqual([]);
  });

  it('no comment in src cites an issue number', () => {
    const citing = filesUnder('src', '.ts').flatMap((file) =>
      commentsOf(read(file))
        .flatMap((comment) => comment.split('\n'))
        .filter(citesOurIssue)
        .map((line) => `${file}: ${line.trim()}`),
    );
    expect(citing).toEqual([]);
    // Scans every source file: seconds on a loaded CI machine, past the 5 s default.
  }, 60_000);

  it('commit subjects since the budget began are at most 72 characters', (context) => {
    const subjects = newCommitSubjects();
    // A shallow clone lacks the older commits; CI clones in full and checks them.
    if (subjects === undefined) return context.skip(`${firstBudgetedParent} is not in this clone`);
    expect(subjects.filter((subject) => subject.length > 72)).toEqual([]);
  });

  it('finds a citation of an issue and leaves other numbers alone', () => {
    const cases: Array<[string, boolean]> = [
      ['// the gap of #15', true],
      ['research for issue 15', true],
      ['(nodejs/node#65446)', false],
      ["['x#1', 'y']", false],
      ['a 64 KiB body, 2 issues', false],
    ];
    for (const [text, cites] of cases) expect(citesOurIssue(text), text).toBe(cites);
  });
});
