/**
 * What a GitHub comment would make of a Markdown text that carries strings a pull request or an
 * agent controls, rendered by micromark with its GitHub-flavoured extension (tables, autolinked
 * URLs, strikethrough), plus what GitHub itself adds after rendering (@mentions, #123
 * references): every element the text makes, every link, every heading, every table row's
 * cells, and any mention or reference in its plain text. `inertProblems` lists what goes
 * beyond what the comment itself writes.
 */
import { micromark } from 'micromark';
import { gfm, gfmHtml } from 'micromark-extension-gfm';

/** The elements pairbench's own Markdown makes (emphasis, code, tables, lists, h4 titles, small print, links). */
const OWN = new Set(['p', 'strong', 'em', 'code', 'table', 'thead', 'tbody', 'tr', 'th', 'td', 'ul', 'li', 'h4', 'sub', 'a', 'br']);

export function renderGfm(markdown: string): string {
  // allowDangerousHtml: GitHub renders the comment's <sub> and any HTML a value would smuggle.
  return micromark(markdown, { allowDangerousHtml: true, extensions: [gfm()], htmlExtensions: [gfmHtml()] });
}

const decode = (s: string) =>
  s
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#(\d+);/g, (_, n: string) => String.fromCodePoint(Number(n)))
    .replace(/&#x([0-9a-f]+);/gi, (_, n: string) => String.fromCodePoint(parseInt(n, 16)))
    .replace(/&amp;/g, '&');

/**
 * What in `markdown` a reader's comment would do beyond plain text: an element of its own, a
 * link other than `links`, a heading other than an h4, a table row with more cells than its
 * header, a GitHub @mention or #reference in text.
 */
export function inertProblems(markdown: string, links: (href: string) => boolean = (h) => h.startsWith('https://github.test/')): string[] {
  const html = renderGfm(markdown.replace(/^<!-- pairbench -->\n/, ''));
  const problems: string[] = [];
  // GFM drops a row's cells beyond its header's: count the row's own delimiters instead.
  let header = -1;
  for (const line of markdown.split('\n')) {
    if (!line.startsWith('|')) {
      header = -1;
      continue;
    }
    const pipes = line.match(/(?<!\\)\|/g)?.length ?? 0;
    if (header < 0) header = pipes;
    else if (pipes !== header) problems.push(`a table row with ${pipes - 1} cells under a header of ${header - 1}: ${line}`);
  }
  const stack: string[] = [];
  let cells = 0;
  let headerCells = -1;
  for (const m of html.matchAll(/<(\/?)([a-zA-Z][a-zA-Z0-9]*)([^>]*)>|([^<]+)/g)) {
    const [, close, tag, attrs, text] = m;
    if (text !== undefined) {
      if (stack.includes('code') || stack.includes('a')) continue;
      const plain = decode(text);
      for (const x of plain.matchAll(/(?:^|[^\w`/.])@[a-z0-9][a-z0-9-]*/gi)) problems.push(`a mention in text: ${x[0].trim()}`);
      for (const x of plain.matchAll(/(?:^|[^\w&/])#\d+/g)) problems.push(`an issue reference in text: ${x[0].trim()}`);
      for (const x of plain.matchAll(/\b(?:https?:\/\/|www\.)\S+/gi)) problems.push(`a URL GitHub would link: ${x[0]}`);
      continue;
    }
    const name = tag!.toLowerCase();
    if (close) {
      const i = stack.lastIndexOf(name);
      if (i >= 0) stack.splice(i);
      if (name === 'tr') {
        if (headerCells < 0) headerCells = cells;
        else if (cells !== headerCells) problems.push(`a table row of ${cells} cells under a header of ${headerCells}`);
      }
      if (name === 'table') headerCells = -1;
      continue;
    }
    if (!OWN.has(name)) problems.push(`an element of its own: <${name}${attrs}>`);
    if (name === 'a') {
      const href = decode(/href="([^"]*)"/.exec(attrs ?? '')?.[1] ?? '');
      if (!links(href)) problems.push(`a link: ${href}`);
    }
    if (/^h[1-6]$/.test(name) && name !== 'h4') problems.push(`a heading: <${name}>`);
    const extra = (attrs ?? '')
      .replace(/\s(href|align)="[^"]*"/g, '')
      .trim()
      .replace(/\/$/, '');
    if (extra) problems.push(`an attribute of its own: <${name} ${extra}>`);
    if (name === 'tr') cells = 0;
    if (name === 'td' || name === 'th') cells++;
    if (!['br'].includes(name)) stack.push(name);
  }
  return problems;
}
