// The learn view: lessons that teach quantization on real tensors, at `#learn` (the index) and
// `#learn/<slug>` (one lesson). The explorer keeps its state in the same URL fragment (`#o=…`,
// www/ui/state.js); a `#learn` fragment is this view's alone, and while it is shown the explorer
// is hidden, not changed. Lessons compute in a Web Worker of their own (one RemoteEngine, made on
// the first lesson), so the explorer's tensor and panels stay as they were; this thread only
// draws. Each lesson is a module of www/ui/lessons/ exporting `lesson` ({slug, title, summary,
// build(ctx)}); www/ui/lessons/kit.js is their shared shell.
import { View } from './view.js';
import { h } from '../lib/panel.js';
import { LessonContext } from './lessons/kit.js';
import { lesson as scaleAndZeroPoint } from './lessons/scale-and-zero-point.js';
import { lesson as perChannel } from './lessons/per-channel.js';
import { lesson as clipping } from './lessons/clipping.js';
import { lesson as observers } from './lessons/observers.js';
import { lesson as floatFormats } from './lessons/float-formats.js';
import { lesson as kQuants } from './lessons/k-quants.js';
import { lesson as rotation } from './lessons/rotation.js';
import { lesson as checkpoint } from './lessons/checkpoint.js';

/** The lessons, in teaching order. */
export const LESSONS = [scaleAndZeroPoint, perChannel, clipping, observers, floatFormats, kQuants, rotation, checkpoint];

/** True when URL fragment `hash` is the learn view's (`#learn`, `#learn/<slug>`), not explorer state. */
export function isLessonHash(hash) {
  return /^#learn(\/|$)/.test(hash || '');
}

export class LearnView extends View {
  /**
   * Render the (hidden) view into `root`.
   * @param context {
   *   registry    the engine's registry (explorer links are encoded against its observers)
   *   makeEngine  () => an engine client (`call`) of the lessons' own, made when a lesson opens
   *   onShow      (learning: boolean) => void: the learn view was shown or hidden
   * }
   */
  mount(root, engine, context = {}) {
    this.attach(root, engine, context);
    this.specs = new Map(context.registry.observers.map((o) => [o.id, o]));
    this.lessonEngine = null;
    /** The key of the tensor the lesson engine holds, and the promise of its selection. */
    this.loaded = null;
    this.current = null;
    this.section = h('section', { id: this.id('learn'), class: 'learn', 'aria-label': 'Learn quantization', hidden: true });
    this.root.replaceChildren(this.section);
    this.onHash = () => this.route(location.hash);
    window.addEventListener('hashchange', this.onHash);
    this.route(location.hash);
    return this;
  }

  unmount() {
    window.removeEventListener('hashchange', this.onHash);
    this.leave();
  }

  /** True while a lesson waits for its engine. */
  get busy() {
    return Boolean(this.current && this.current.running > 0);
  }

  /** The lessons' engine, made on first use. */
  engineForLessons() {
    this.lessonEngine ||= this.context.makeEngine(() => {
      // The worker was restarted: its tensor is gone; the lesson shown asks again.
      this.loaded = null;
      if (this.current) this.open(this.current.lesson);
    });
    return this.lessonEngine;
  }

  /**
   * Make `key` the lesson engine's tensor, loading the files `files()` gives (as `Engine.load`
   * takes them) unless it holds it already; resolves to its `{summary, hist}`. Calls are answered
   * in the order made, so a lesson's calls after this one see this tensor.
   */
  use(key, files, ctx) {
    if (this.loaded && this.loaded.key === key) return this.loaded.ready;
    const ready = (async () => {
      const list = await files();
      await ctx.call('load', { files: list });
      return ctx.call('select', { selection: { batches: [{ file: 0, member: '' }], split: null } });
    })();
    this.loaded = { key, ready };
    ready.catch(() => {
      if (this.loaded && this.loaded.ready === ready) this.loaded = null;
    });
    return ready;
  }

  /** Show what `hash` asks for: the index, a lesson, or (not a learn fragment) nothing. */
  route(hash) {
    const learning = isLessonHash(hash);
    document.body.classList.toggle('learning', learning);
    this.section.hidden = !learning;
    if (this.context.onShow) this.context.onShow(learning);
    if (!learning) {
      this.leave();
      return;
    }
    const slug = hash.replace(/^#learn\/?/, '');
    const lesson = LESSONS.find((l) => l.slug === slug);
    if (lesson) this.open(lesson);
    else this.showIndex(slug);
    window.scrollTo(0, 0);
  }

  /** Stop the lesson shown (its engine calls are refused from now on). */
  leave() {
    if (this.current) this.current.live = false;
    this.current = null;
  }

  showIndex(unknown = '') {
    this.leave();
    this.section.replaceChildren(
      h('div', { class: 'card learn-index', 'data-lesson': 'index' },
        h('div', { class: 'lesson-nav' }, h('a', { href: '#', class: 'back', text: '← Back to the explorer' })),
        h('h2', { text: 'Learn quantization, on real tensors' }),
        h('p', { class: 'lead', text: 'Eight short lessons. Each one takes a real tensor (a few numbers you type, or a weight and an activation of the MiniLM sentence encoder), lets you move one setting, and shows what the quantization engine computes. Every number comes from the same engine as the explorer.' }),
        unknown ? h('p', { class: 'alert', role: 'alert', text: `There is no lesson called “${unknown}”. Pick one below.` }) : null,
        h('ol', { class: 'lesson-list' },
          ...LESSONS.map((l) => h('li', {}, h('a', { href: `#learn/${l.slug}`, text: l.title }), h('span', { class: 'muted', text: ` — ${l.summary}` }))))),
    );
  }

  /** Build and show `lesson`. */
  open(lesson) {
    this.leave();
    const host = { engine: () => this.engineForLessons(), use: (key, files, ctx) => this.use(key, files, ctx), specs: this.specs, index: LESSONS };
    const ctx = new LessonContext(host, lesson);
    this.current = ctx;
    this.section.replaceChildren(
      h('div', { class: 'lesson-nav top-nav' }, h('a', { href: '#', class: 'back', text: '← Back to the explorer' })),
      ctx.root,
    );
    lesson.build(ctx);
  }
}
