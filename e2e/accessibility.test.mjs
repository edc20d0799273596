// Accessibility of the whole page in headless Chromium: every view in a populated state (the
// rotation preview on, the demo's observer panels with a failed panel and a refused file, the
// formats with one added, an AdaRound run, a ranked checkpoint, a compared checkpoint with a pair
// up close, every <details> open) has no serious or critical axe-core violation, and the keyboard
// alone reaches every control (Tab, no tabindex traps) with its focus shown.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { start, RESULTS, ggufGolden, compareCheckpoints, rank, axeViolations, describeViolation } from './helpers.mjs';

/** The page's views: a name and the element axe checks. */
const VIEWS = [
  ['explorer (tensor and observer panels)', { include: [['section.data'], ['#observers-view']] }],
  ['formats', '#formats-view'],
  ['AdaRound', '#adaround-view'],
  ['model', '#model-view'],
  ['compare', '#compare-view'],
];

/** The violations that fail the test, one line each. */
const serious = (violations) => violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map(describeViolation);

/** What the keyboard must reach: every interactive element. */
const CONTROLS = 'a[href], button, input, select, textarea, summary, [role=slider], [tabindex]';

let env;
let page;
before(async () => {
  env = await start();
  page = await env.page();
  const idle = () => page.evaluate(() => window.quantscope.idle());
  await page.waitForSelector('#formats[data-state=done]');
  // The rotation preview: every panel and format row shows its numbers after rotation too.
  await page.check('#rotate-on');
  // Explorer: a refused file (its alert) and a panel whose parameters fail (its error).
  await page.setInputFiles('#file', { name: 'broken.npy', mimeType: 'application/octet-stream', buffer: Buffer.from('\x93NUMPY\x01\x00not a header') });
  await idle();
  await page.evaluate(() => window.quantscope.observe('torch.MovingAverageMinMaxObserver', { quant_min: 0, quant_max: 0 }));
  // Formats: one added (its row and remove button).
  await page.evaluate(() => window.quantscope.addFormat('int', { bits: 3, granularity: 'per_channel' }));
  // AdaRound: the demo layer, a short run.
  await page.click('#ada-demo');
  await page.waitForFunction(() => document.querySelector('#ada-w').selectedOptions[0]?.textContent.includes('l0_attn_output_dense_weight'));
  await page.click('#adaround details.adder summary');
  await page.fill('#ada-controls [data-param=iterations] input.exact', '200');
  await page.dispatchEvent('#ada-controls [data-param=iterations] input.exact', 'change');
  await page.click('#ada-run');
  await page.waitForSelector('#adaround[data-state=done]', { timeout: 120000 });
  // Model: the golden checkpoint ranked. Compare: its Q4_K_M GGUF against it, the worst pair up close.
  const golden = ggufGolden();
  assert.equal((await rank(page, 'model-files', golden.original)).state, 'done');
  assert.equal(await compareCheckpoints(page, golden), 'done');
  await page.click('#compare-table tbody tr.openable');
  await page.waitForSelector('#compare-tensor[data-state=ready]', { timeout: 60000 });
  await page.$$eval('details', (all) => all.forEach((d) => (d.open = true)));
  await idle();
  await page.screenshot({ path: path.join(RESULTS, 'accessibility-page.png'), fullPage: true });
});
after(async () => {
  await env.close();
});

for (const [name, context] of VIEWS) {
  test(`axe-core finds no serious or critical violation in the ${name} view`, async (t) => {
    const violations = await axeViolations(page, context);
    for (const v of violations) t.diagnostic(`${v.impact}: ${describeViolation(v)}`);
    assert.deepEqual(serious(violations), []);
  });
}

test('axe-core finds no serious or critical violation in the whole page', async () => {
  assert.deepEqual(serious(await axeViolations(page)), []);
});

test('the keyboard alone reaches every control, and shows where the focus is', async (t) => {
  // Every visible, enabled control, and the focus as Tab moves it: each element focused, and
  // whether a focus ring was drawn (a visually hidden file input shows it on its label).
  await page.evaluate((selector) => {
    const described = (el) => {
      const classes = [...el.classList].map((c) => `.${c}`).join('');
      const name = el.getAttribute('aria-label') || el.closest('[data-param]')?.dataset.param || el.textContent.trim().slice(0, 40);
      return `${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ''}${classes}${name ? ` "${name}"` : ''}`;
    };
    const ringed = (el) => {
      const s = getComputedStyle(el);
      return s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) > 0;
    };
    const controls = [...document.querySelectorAll(selector)].filter((el) => !el.disabled && el.checkVisibility({ visibilityProperty: true }));
    const reached = new Map();
    document.addEventListener('focusin', (e) => {
      const el = e.target;
      const shown = el.classList.contains('visually-hidden') ? [...(el.labels || [])] : [el];
      reached.set(el, shown.some(ringed));
    });
    window.keyboardCheck = () => ({
      controls: controls.length,
      reached: reached.size,
      missed: controls.filter((el) => !reached.has(el)).map(described),
      negative: controls.filter((el) => el.tabIndex < 0).map(described),
      positive: [...document.querySelectorAll('[tabindex]')].filter((el) => el.tabIndex > 0).map(described),
      unringed: [...reached].filter(([, ring]) => !ring).map(([el]) => described(el)),
    });
    document.activeElement?.blur();
    window.scrollTo(0, 0);
  }, CONTROLS);
  const { controls } = await page.evaluate(() => window.keyboardCheck());
  for (let i = 0; i < controls + 20; i++) await page.keyboard.press('Tab');
  const result = await page.evaluate(() => window.keyboardCheck());
  t.diagnostic(`Tab reached ${result.reached} elements; ${result.controls} controls`);
  assert.ok(result.controls > 100, `${result.controls} controls`);
  assert.deepEqual(result.positive, [], 'no positive tabindex');
  assert.deepEqual(result.negative, [], 'no visible control is taken out of the tab order');
  assert.deepEqual(result.missed, [], `Tab reached ${result.reached} of ${result.controls} controls`);
  assert.deepEqual(result.unringed, [], 'focus is visible');
  // A focused file picker (its label) and a focused table row, for the eye (the pointer away).
  await page.mouse.move(0, 0);
  await page.focus('#model-files');
  await page.keyboard.press('Shift+Tab');
  await page.keyboard.press('Tab');
  await page.locator('#model-view').screenshot({ path: path.join(RESULTS, 'accessibility-focus-file.png') });
  await page.focus('#compare-table tbody tr.openable:nth-child(3)');
  await page.keyboard.press('Shift+Tab');
  await page.keyboard.press('Tab');
  await page.locator('#compare-view .model-table-wrap').screenshot({ path: path.join(RESULTS, 'accessibility-focus-row.png') });
  assert.deepEqual(page.errors, []);
});
