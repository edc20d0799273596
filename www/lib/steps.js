// Long operations (loading files, comparing formats, AdaRound) are written once, as step
// generators, and driven two ways: at once by `runSync` (the npm package's synchronous API) or
// piecewise by `runAsync` (the worker, the page and notebooks: progress, other requests in between,
// cancel). A step generator yields
//
//   {progress: {fraction, label, …}}  the driver reports it, then resumes the generator with
//                                     `true` when the caller asked it to stop (an aborted signal,
//                                     or onProgress returning false); the generator decides what
//                                     stopping means (throw `Cancelled`, or conclude early);
//   {wait: promise}                   the asynchronous driver resumes it with the promise's value
//                                     (reading a Blob); the synchronous driver refuses.
//
// and returns the operation's result.

/** An operation stopped at the caller's request. */
export class Cancelled extends Error {
  constructor(message = 'cancelled') {
    super(message);
    this.name = 'Cancelled';
    this.cancelled = true;
  }
}

/** Resolves on the next macrotask: lets queued messages (a cancel, another request) in. */
export const nextTask = () => new Promise((resolve) => setTimeout(resolve, 0));

/** Report `progress`; true when the caller declined to go on (onProgress returned false). */
function report(progress, onProgress) {
  return onProgress ? onProgress(progress) === false : false;
}

const aborted = (signal) => Boolean(signal && signal.aborted);

/** Drive `steps` to the end without waiting; a step that needs to wait is refused. */
export function runSync(steps, { onProgress, signal } = {}) {
  let next = steps.next();
  while (!next.done) {
    if (next.value.wait) {
      steps.return();
      throw new TypeError('this input (a Blob or File) is read asynchronously: use the asynchronous API');
    }
    const declined = report(next.value.progress, onProgress);
    next = steps.next(declined || aborted(signal));
  }
  return next.value;
}

/**
 * Time between two turns given to the event loop by `runAsync`. A turn after every progress
 * would cost a timer each (browsers clamp nested `setTimeout(0)` to 4 ms: 14 s over the 3,492
 * pairs of a 1 GiB diff), while a cancel or another request only needs to get in promptly.
 */
const TURN_MS = 10;
const clock = () => (typeof performance !== 'undefined' ? performance.now() : Date.now());

/**
 * Drive `steps`, awaiting its waits and giving the event loop a turn after a progress report
 * when TURN_MS have passed since the last one (a wait gives it a turn too).
 */
export async function runAsync(steps, { onProgress, signal } = {}) {
  let next = steps.next();
  let turn = clock();
  while (!next.done) {
    const step = next.value;
    if (step.wait) {
      let value;
      try {
        value = await step.wait;
      } catch (err) {
        next = steps.throw(err);
        continue;
      }
      turn = clock();
      next = steps.next(value);
      continue;
    }
    const declined = report(step.progress, onProgress);
    if (clock() - turn >= TURN_MS) {
      await nextTask();
      turn = clock();
    }
    next = steps.next(declined || aborted(signal));
  }
  return next.value;
}
