import type { Page } from 'playwright-core';

/**
 * What a reader of the page at its current width cannot see, element by element: every plot
 * mark (an SVG shape or label) must lie inside the window and inside every box that clips it;
 * every table must fit its box, or sit in a box that scrolls sideways and shows that it does
 * (the scroll shadow: a gradient background). Evaluated in the page (the tests' tsconfig has no
 * DOM library, so the code is a string).
 */
export async function clippingProblems(page: Page): Promise<string[]> {
  return (await page.evaluate(`(() => {
    const problems = [];
    const name = (el) => el.tagName.toLowerCase() + (el.getAttribute('class') ? '.' + el.getAttribute('class').trim().split(/\\s+/).join('.') : '');
    const clips = (el) => {
      const out = [];
      for (let p = el.parentElement; p; p = p.parentElement) {
        const o = getComputedStyle(p).overflowX;
        if (o === 'auto' || o === 'scroll' || o === 'hidden' || o === 'clip') out.push(p);
      }
      return out;
    };
    const W = window.innerWidth;
    const marks = document.querySelectorAll('svg circle, svg rect, svg path, svg line, svg polyline, svg polygon, svg ellipse, svg text');
    for (const m of marks) {
      const r = m.getBoundingClientRect();
      if (r.width === 0 && r.height === 0) continue;
      if (getComputedStyle(m).visibility === 'hidden' || getComputedStyle(m).display === 'none') continue;
      let edge = W;
      let left = 0;
      for (const c of clips(m)) {
        const b = c.getBoundingClientRect();
        edge = Math.min(edge, b.right);
        left = Math.max(left, b.left);
      }
      if (r.right > edge + 1 || r.left < left - 1)
        problems.push('plot mark ' + name(m) + ' in ' + name(m.closest('svg')) + ' spans ' + Math.round(r.left) + '..' + Math.round(r.right) + ' px, visible ' + Math.round(left) + '..' + Math.round(edge));
    }
    for (const t of document.querySelectorAll('table')) {
      const box = clips(t)[0];
      const r = t.getBoundingClientRect();
      if (!box) {
        if (r.right > W + 1) problems.push('table ' + name(t) + ' runs to ' + Math.round(r.right) + ' px in a ' + W + ' px window');
        continue;
      }
      if (box.scrollWidth <= box.clientWidth + 1) continue;
      const bg = getComputedStyle(box).backgroundImage;
      if (!bg.includes('gradient')) problems.push('table ' + name(t) + ' scrolls sideways (' + box.scrollWidth + ' px in ' + box.clientWidth + ') with no cue that it does');
    }
    return problems;
  })()`)) as string[];
}
