// Work put where a job finds it (a balance batch queued, say), and the job told at once rather than at its next
// tick. A wake-up is a hint only: the job's interval still runs it, so a wake-up that reaches no one (a worker
// thread's work, the CLI's, another replica's) costs that interval and nothing else.

export class Wakeups {
  private readonly listeners = new Map<string, Set<() => void>>();

  /** `fn` called at every wake-up of `name` (the job runner's, for the job of that name); returns its removal. */
  on(name: string, fn: () => void): () => void {
    let set = this.listeners.get(name);
    if (!set) this.listeners.set(name, (set = new Set()));
    set.add(fn);
    return () => {
      set.delete(fn);
    };
  }

  /** Tells whoever listens for `name` that there is work; nothing when no one does. Never throws. */
  wake(name: string): void {
    for (const fn of this.listeners.get(name) ?? []) {
      try {
        fn();
      } catch {
        // A listener's failure is its own: the work is still found at the job's next tick.
      }
    }
  }
}
