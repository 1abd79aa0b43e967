/**
 * Calls with the same key made while one is in flight share its promise: when a cached answer
 * expires, the requests that find it gone together ask for it once, not once each.
 */
export class SingleFlight<V> {
  private readonly inFlight = new Map<string, Promise<V>>();

  run(key: string, fn: () => Promise<V>): Promise<V> {
    const running = this.inFlight.get(key);
    if (running) return running;
    const p = fn();
    this.inFlight.set(key, p);
    const forget = () => {
      if (this.inFlight.get(key) === p) this.inFlight.delete(key);
    };
    p.then(forget, forget);
    return p;
  }

  /** Later calls start afresh (the answer changed); calls already in flight still settle. */
  forget(key?: string): void {
    if (key === undefined) this.inFlight.clear();
    else this.inFlight.delete(key);
  }
}
