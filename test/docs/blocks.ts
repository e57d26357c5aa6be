/**
 * Docs as tests: every fenced code block of README.md and docs/ is run against a live server, or
 * carries a marker directly above it that says why it cannot run in CI. This module reads the
 * blocks, their markers and how blocks of one page build on each other; blocks.test.ts runs them.
 *
 * Markers (an HTML comment on the line above the opening fence, blank lines allowed between):
 *   <!-- not run in CI: needs a GPU -->           the reason must match one of NOT_RUN_REASONS
 *   <!-- docs-test: continues the block above --> joins the page's previous block of the same
 *                                                 language into one program (shared variables)
 * Blocks of one page run in order in one working directory, so a file one block writes (a dataset,
 * say) is there for the next.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

/** Why a block may not run in CI. A marker's reason must match one of these. */
export const NOT_RUN_REASONS: readonly RegExp[] = [
  /^needs a GPU\b/,
  /^needs [^,]+'s packages\b/, // a framework's, ManiSkill's, the MCP Python SDK's, ...
  /^needs CARLA\b/,
  /^needs Docker\b/,
  /^needs a Ray cluster\b/,
  /^needs data outside the repository\b/,
  /^installs packages\b/,
  /^publishes\b/,
  /^a long-running server\b/,
  /^a fragment of a larger example\b/,
];

/** Block languages that are programs; everything else is output or config. */
export const RUNNABLE = new Set(['sh', 'bash', 'python', 'ts']);

export interface DocBlock {
  /** Path relative to the repository root. */
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  lang: string;
  code: string;
  /** The reason of a `not run in CI` marker, if any. */
  notRun?: string;
  /** True when marked as continuing the page's previous block of the same language. */
  continues: boolean;
  /** A marker whose text is not one of the accepted forms (the test fails on it). */
  badMarker?: string;
}

const FENCE = /^(\s*)(`{3,})\s*([\w-]*)\s*$/;
const MARKER = /^<!--\s*(not run in CI|docs-test):\s*(.*?)\s*-->$/;

export function extractBlocks(file: string, text: string): DocBlock[] {
  const lines = text.split('\n');
  const blocks: DocBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!);
    if (!open) continue;
    const [, indent, fence, lang] = open;
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length && !(lines[j]!.trim().startsWith(fence!) && lines[j]!.trim().replace(/`/g, '') === ''); j++) {
      body.push(lines[j]!.startsWith(indent!) ? lines[j]!.slice(indent!.length) : lines[j]!);
    }
    const block: DocBlock = { file, line: i + 1, lang: lang!.toLowerCase(), code: body.join('\n') + '\n', continues: false };
    let k = i - 1;
    while (k >= 0 && lines[k]!.trim() === '') k--;
    const marker = k >= 0 ? MARKER.exec(lines[k]!.trim()) : null;
    if (marker) {
      const [, kind, text] = marker;
      if (kind === 'not run in CI') {
        if (NOT_RUN_REASONS.some((r) => r.test(text!))) block.notRun = text;
        else block.badMarker = `unknown reason "${text}"`;
      } else if (text === 'continues the block above') block.continues = true;
      else block.badMarker = `unknown docs-test marker "${text}"`;
    }
    blocks.push(block);
    i = j;
  }
  return blocks;
}

/** README.md and every Markdown page under docs/, relative to root. */
export function docPages(root: string): string[] {
  const pages = ['README.md'];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.md')) pages.push(relative(root, path));
    }
  };
  walk(join(root, 'docs'));
  return pages.sort();
}

/** A program: one block, or several of one language joined by `continues` markers. */
export interface Program {
  lang: string;
  blocks: DocBlock[];
  code: string;
}

/** The runnable, unmarked blocks of a page as programs, in page order. */
export function programsOf(blocks: readonly DocBlock[]): Program[] {
  const programs: Program[] = [];
  const lastOfLang = new Map<string, Program>();
  for (const block of blocks) {
    if (!RUNNABLE.has(block.lang) || block.notRun || block.badMarker) continue;
    const lang = block.lang === 'bash' ? 'sh' : block.lang;
    const previous = lastOfLang.get(lang);
    if (block.continues && previous) {
      previous.blocks.push(block);
      previous.code += block.code;
      continue;
    }
    const program: Program = { lang, blocks: [block], code: block.code };
    programs.push(program);
    lastOfLang.set(lang, program);
  }
  return programs;
}

export function readPage(root: string, file: string): DocBlock[] {
  return extractBlocks(file, readFileSync(join(root, file), 'utf8'));
}
