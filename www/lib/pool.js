// A pool of engines that answers the same `call(method, args, {onProgress, signal})` as one
// (rpc.js's RemoteEngine or LocalEngine), so the explorer's views use it unchanged. Each member is
// such a client over its own WebAssembly session; in the page, one Web Worker each (no
// SharedArrayBuffer: every worker holds its own copy of the tensor, which it reads itself from the
// File it is handed). The pool knows nothing of the transport: any client with `call` will do.
//
// How calls are routed:
// - `load` and `select` change what is loaded and selected: every member runs them, so every
//   session holds the same tensor. The caller sees the first member's progress and result. A load
//   that some members finished and others were cancelled in is finished on those too (the cancel
//   came too late), so the sessions never differ; it fails only when every member failed.
// - The calls of one observer (`observe`, `update`, `updateDeferred`, `complete`, `explain`,
//   `observeRotated` — its run after rotation, so these spread as the panels do —, `remove`, by
//   `args.id`) go to the member that owns it. A fresh `observe` of an observer nobody owns waits in
//   the pool until a member has room for it (fewer than QUEUED_PER_MEMBER observations queued),
//   and that member becomes its owner: slow observers spread themselves over the members,
//   whatever their order. An observer and the variant that corrects it (the registry entry's
//   `corrects`) or the alias that runs it (`alias_of`), both read from this thread's WebAssembly
//   module, which the page initialises before it makes the pool, go to the same member, where the
//   engine computes the work they share once (Horizon's MSE candidates, the histograms,
//   llm-compressor's searches). A new selection drops every result, so owners
//   are forgotten at each `select`.
// - `curve` and `comparisonSvg` need the reports of several observers: each owner computes its
//   part (`curve` markers, `comparison` panels) and the parts are put back in the order of `ids`
//   (the one figure is then rendered by the first member). `results` joins every member's.
// - `diff` (the compare view) is shared out: each member compares one portion of the pairs (the
//   CLI's `--shard i/n` split) and the first member merges the portions (`mergePortions`, the
//   CLI's `merge`) into the whole diff's report.
// - Everything else (formats, AdaRound, quantize, the model view, the registry) runs on the first
//   member, as with one engine.
//
// Results are identical to one engine's: every member computes each observer's report on the
// same tensor with the same code; only where it runs differs.

import { registry } from '../pkg/quantscope.js';

/** Calls that every member runs (they change what is loaded and selected). */
const BROADCAST = new Set(['load', 'select']);
/** Calls of one observer, routed by `args.id` to the member that owns it. */
const BY_OBSERVER = new Set(['observe', 'update', 'updateDeferred', 'complete', 'explain', 'observeRotated', 'remove']);
/**
 * Fresh observations a member may have queued at once before the pool holds the next ones: two,
 * so that a member finishing one starts the next at once, without waiting for the page (busy
 * drawing another panel) to hand it over; few, so that slow observers still spread.
 */
const QUEUED_PER_MEMBER = 2;

let facts = null;

/**
 * What the registry says of how observers run: whose work each shares (`sharing`: id → the
 * observer it corrects or is an alias of) and which are heavy (`heavy`). Read from this thread's
 * WebAssembly module; null while it is not initialised (then every observer is its own and none
 * is heavy: results are the same, only placement differs). The pool and `observeMany`'s threads
 * place observers by it.
 */
export function observerFacts() {
  if (facts === null) {
    try {
      const { observers } = registry();
      const shared = (o) => o.corrects ?? o.alias_of;
      facts = {
        sharing: new Map(observers.filter(shared).map((o) => [o.id, shared(o)])),
        heavy: new Set(observers.filter((o) => o.heavy).map((o) => o.id)),
      };
    } catch {
      return null; // the module is not initialised (yet)
    }
  }
  return facts;
}

const cancelled = (err) => Boolean(err && err.cancelled);

/** The observer id a report, marker or panel view belongs to. */
const observerOf = (item) => item.observer;

export class EnginePool {
  /**
   * @param {Array<{call: Function, busy: number, dead?: boolean}>} members engine clients over
   *   sessions of their own (at least one)
   */
  constructor(members) {
    if (!Array.isArray(members) || members.length === 0) throw new TypeError('an engine pool needs at least one engine');
    this.members = members;
    /** Observer id → index of the member holding its run. */
    this.owners = new Map();
    /** Fresh observations per member not answered yet. */
    this.queued = members.map(() => 0);
    /** Heavy observations (see `dispatch`) per member not answered yet. */
    this.heavyQueued = members.map(() => 0);
    /** Observations waiting for a member: {args, run, resolve, reject}. */
    this.waiting = [];
  }

  /** Number of members. */
  get size() {
    return this.members.length;
  }

  /** Calls in flight (background jobs excluded) and observations waiting in the pool. */
  get busy() {
    return this.members.reduce((n, m) => n + m.busy, 0) + this.waiting.length;
  }

  /** True when a member stopped for good (it kept crashing). */
  get dead() {
    return this.members.some((m) => m.dead);
  }

  /** Resolves to `method`'s value, computed where the header says. */
  call(method, args = {}, run = {}) {
    if (BROADCAST.has(method)) return this.broadcast(method, args, run);
    if (BY_OBSERVER.has(method)) return this.callObserver(method, args, run);
    if (method === 'curve') return this.curve(args, run);
    if (method === 'comparisonSvg') return this.comparisonSvg(args, run);
    if (method === 'results') return this.results(run);
    if (method === 'diff' && this.members.length > 1 && !args.portion) return this.diff(args, run);
    return this.members[0].call(method, args, run);
  }

  /** The observer whose work observer `id` shares, else itself. */
  groupOf(id) {
    return observerFacts()?.sharing.get(id) ?? id;
  }

  /** Whether observer `id`'s search is heavy (the registry's `heavy`). */
  isHeavy(id) {
    return observerFacts()?.heavy.has(id) ?? false;
  }

  /** Every member runs `method`: the first one's value, once all agree (see the header). */
  async broadcast(method, args, run) {
    this.releaseWaiting();
    if (method === 'select') this.owners.clear();
    const { onProgress = null, ...rest } = run;
    const calls = this.members.map((m, i) => m.call(method, args, { ...rest, onProgress: i === 0 ? onProgress : null }));
    const outcomes = await Promise.allSettled(calls);
    const done = outcomes.findIndex((o) => o.status === 'fulfilled');
    if (done < 0) throw outcomes[0].reason;
    const late = outcomes.map((o, i) => (o.status === 'rejected' && cancelled(o.reason) ? i : -1)).filter((i) => i >= 0);
    const { signal: _ignored, ...unstoppable } = rest;
    await Promise.all(late.map((i) => this.members[i].call(method, args, unstoppable)));
    const failed = outcomes.find((o) => o.status === 'rejected' && !cancelled(o.reason));
    if (failed) throw failed.reason;
    return outcomes[done].value;
  }

  /** A call of observer `args.id`, on its owner (a fresh observation may wait for a member). */
  callObserver(method, args, run) {
    const owner = this.owners.get(args.id);
    if (owner !== undefined) return this.members[owner].call(method, args, run);
    if (method === 'observe') {
      return new Promise((resolve, reject) => {
        this.waiting.push({ args, run, resolve, reject });
        this.dispatch();
      });
    }
    if (method === 'remove') {
      this.dropWaiting(args.id);
      return Promise.resolve(null);
    }
    // Not observed yet (e.g. after a restart): the first member answers as one engine would.
    return this.members[0].call(method, args, run);
  }

  /** The member owning an observer that shares its work with `id` (see the header), if any. */
  siblingOwner(id) {
    const group = this.groupOf(id);
    for (const [other, member] of this.owners) if (other !== id && this.groupOf(other) === group) return member;
    return undefined;
  }

  /**
   * Hand waiting observations to members with room for them, least loaded first (a variant or
   * alias to the member of the observer whose work it shares). Heavy observers (the registry's
   * `heavy`: searches that take seconds on a large tensor) start at once but on all members but
   * one while lighter observations wait, and nothing queues behind them meanwhile: the light
   * panels come first on the free member, and the heavy searches overlap them instead of
   * starting after them.
   */
  dispatch(limit = QUEUED_PER_MEMBER) {
    while (this.waiting.length > 0) {
      // A variant joins the member of the observer it shares work with whatever that member has
      // queued.
      const joining = this.waiting.findIndex((w) => this.siblingOwner(w.args.id) !== undefined);
      if (joining >= 0) {
        const [observation] = this.waiting.splice(joining, 1);
        this.send(observation, this.siblingOwner(observation.args.id));
        continue;
      }
      const lightWaiting = this.waiting.some((w) => !this.isHeavy(w.args.id));
      let best = -1;
      for (let i = 0; i < this.members.length; i++) {
        const room = lightWaiting && this.heavyQueued[i] > 0 && limit !== Infinity ? 1 : limit;
        if (this.queued[i] < room && (best < 0 || this.queued[i] < this.queued[best])) best = i;
      }
      if (best < 0) return;
      const heavyElsewhere = this.heavyQueued.reduce((n, h, i) => n + (i === best ? 0 : Math.sign(h)), 0);
      const heavyRoom = !lightWaiting || (this.members.length > 1 && heavyElsewhere + 1 < this.members.length) || limit === Infinity;
      const heavyAt = heavyRoom ? this.waiting.findIndex((w) => this.isHeavy(w.args.id)) : -1;
      const [observation] = this.waiting.splice(heavyAt >= 0 ? heavyAt : this.waiting.findIndex((w) => !this.isHeavy(w.args.id)), 1);
      this.send(observation, best);
    }
  }

  /** Send a waiting observation to member `i`, which becomes the observer's owner. */
  send({ args, run, resolve, reject }, i) {
    this.owners.set(args.id, i);
    const heavy = this.isHeavy(args.id) ? 1 : 0;
    this.queued[i] += 1;
    this.heavyQueued[i] += heavy;
    const settle = () => {
      this.queued[i] -= 1;
      this.heavyQueued[i] -= heavy;
      this.dispatch();
    };
    this.members[i].call('observe', args, run).then(
      (value) => {
        settle();
        resolve(value);
      },
      (err) => {
        settle();
        reject(err);
      },
    );
  }

  /**
   * Send every waiting observation now (before a call that changes the tensor), so each member
   * runs its calls in the order they were made.
   */
  releaseWaiting() {
    this.dispatch(Infinity);
  }

  /** Forget a waiting observation of `id` (it was removed before it started). */
  dropWaiting(id) {
    const kept = [];
    for (const w of this.waiting) {
      if (w.args.id === id) w.resolve(null);
      else kept.push(w);
    }
    this.waiting = kept;
  }

  /**
   * `ids` (with `colors`) split by owner: [{member, ids, colors}], the first member's share
   * first (it also gets the observers nobody owns).
   */
  shares(ids, colors) {
    const byMember = this.members.map((_, member) => ({ member, ids: [], colors: [] }));
    ids.forEach((id, k) => {
      const share = byMember[this.owners.get(id) ?? 0];
      share.ids.push(id);
      share.colors.push(colors[k] ?? k);
    });
    return byMember.filter((s, i) => i === 0 || s.ids.length > 0);
  }

  /** `items` (each with `observer`) in the order of `ids`. */
  static inOrder(items, ids) {
    const rank = new Map(ids.map((id, k) => [id, k]));
    return [...items].sort((a, b) => rank.get(observerOf(a)) - rank.get(observerOf(b)));
  }

  /** The error curve with the markers of `ids`, each computed by the observer's owner. */
  async curve({ spec, ids = [], colors = [] }, run) {
    const parts = await Promise.all(this.shares(ids, colors).map((s) => this.members[s.member].call('curve', { spec, ids: s.ids, colors: s.colors }, run)));
    const [first] = parts;
    if (!first) return first;
    return { ...first, markers: EnginePool.inOrder(parts.flatMap((p) => (p ? p.markers : [])), ids) };
  }

  /** The comparison figure of `ids`: each owner's panels and markers, drawn by the first member. */
  async comparisonSvg({ ids, colors, curve = null, style = {}, width = 1400 }, run) {
    const parts = await Promise.all(this.shares(ids, colors).map((s) => this.members[s.member].call('comparison', { ids: s.ids, colors: s.colors, curve }, run)));
    const [first] = parts;
    if (!first) throw new Error('no tensor loaded');
    const comparison = {
      ...first,
      panels: EnginePool.inOrder(parts.flatMap((p) => p.panels), ids),
      curve: first.curve && { ...first.curve, markers: EnginePool.inOrder(parts.flatMap((p) => p.curve.markers), ids) },
    };
    return this.members[0].call('renderComparisonSvg', { comparison, style, width }, run);
  }

  /**
   * A diff shared out: member `i` of `n` compares portion `i` of the pairs (contiguous, balanced
   * by elements, as the CLI's `--shard i/n`), the first member merges the portions' documents
   * into the whole diff's report. Progress carries every member's rows as they come, with the
   * pairs done by all over the whole diff's pairs, until the call settles. A cancel, or a member
   * failing, stops every member.
   */
  async diff(args, run) {
    const { onProgress = null, signal = null, ...rest } = run;
    const n = this.members.length;
    const stop = new AbortController();
    const abort = () => stop.abort();
    if (signal) {
      if (signal.aborted) stop.abort();
      else signal.addEventListener('abort', abort, { once: true });
    }
    const done = new Array(n).fill(0);
    let pairs;
    let open = true;
    const report = (index) => (p) => {
      if (!open || !onProgress) return;
      if (p.pairs !== undefined) pairs = p.pairs;
      if (p.done !== undefined) done[index] = p.done;
      const total = done.reduce((a, b) => a + b, 0);
      const label = pairs === undefined ? p.label : `${total} of ${pairs} pairs compared`;
      onProgress({ ...p, fraction: pairs ? total / pairs : 0, label, done: total, of: pairs });
    };
    try {
      const documents = await Promise.all(this.members.map((m, index) => m
        .call('diff', { ...args, portion: { index, count: n } }, { ...rest, signal: stop.signal, onProgress: report(index) })
        .catch((err) => {
          stop.abort();
          throw err;
        })));
      return await this.members[0].call('mergePortions', { documents }, rest);
    } finally {
      open = false;
      if (signal) signal.removeEventListener('abort', abort);
    }
  }

  /** Every member's reports, by observer id (the order of one engine's). */
  async results(run) {
    const parts = await Promise.all(this.members.map((m) => m.call('results', {}, run)));
    return parts.flat().sort((a, b) => (observerOf(a) < observerOf(b) ? -1 : observerOf(a) > observerOf(b) ? 1 : 0));
  }
}

/** The number of members a pool of this machine gets: its logical cores, at most `max`. */
export function poolSize(max = 8) {
  const cores = typeof navigator !== 'undefined' && navigator.hardwareConcurrency ? navigator.hardwareConcurrency : 1;
  return Math.max(1, Math.min(max, cores));
}
