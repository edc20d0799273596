// The browser of a test file: the static server and Chromium (helpers.mjs `start`) started
// before the file's tests and closed after them.
import { before, after } from 'node:test';
import { start } from './helpers.mjs';

/**
 * Start the server and Chromium before this file's tests (after `setup()`, e.g. the npm
 * package's `init`) and close them after; returns the environment (`page()`, `url`, `browser`)
 * for the tests to use.
 */
export function browserForTests({ setup = null } = {}) {
  let env = null;
  before(async () => {
    if (setup) await setup();
    env = await start();
  });
  after(async () => {
    await env.close();
  });
  return {
    page: (options) => env.page(options),
    get url() {
      return env.url;
    },
    get browser() {
      return env.browser;
    },
  };
}
