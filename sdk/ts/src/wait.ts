// waitForLoadBalancer: until a load balancer is ready, error or deleted, over WatchEvents with a
// poll fallback.

import type { ComputeClient } from "./client.js";
import type { LoadBalancer } from "./gen/bettercompute/compute/v1/load_balancers_pb.js";
import { toPlatformError } from "./errors.js";
import type { LoadBalancerState } from "./states.js";

/** WaitOptions tunes waitForLoadBalancer. */
export interface WaitOptions {
  /** The states that end the wait (default ready, error and deleted). */
  until?: readonly LoadBalancerState[];
  /** Gives up after this many ms with a WaitTimeoutError (default: only signal ends it). */
  timeoutMs?: number;
  /** How often the load balancer is read once the event stream failed (default 2000). */
  pollIntervalMs?: number;
  /** An event stream silent this long (no event, no heartbeat) is given up for polling (default 45000). */
  idleTimeoutMs?: number;
  /** Ends the wait: the promise rejects with the signal's reason. */
  signal?: AbortSignal;
}

/** WaitTimeoutError: the load balancer did not reach a state of `until` in time. */
export class WaitTimeoutError extends Error {
  constructor(
    message: string,
    /** The load balancer as last read (undefined: never read). */
    readonly loadBalancer: LoadBalancer | undefined,
  ) {
    super(message);
    Object.setPrototypeOf(this, new.target.prototype);
    this.name = "WaitTimeoutError";
  }
}

/** LoadBalancerFailedError: the load balancer turned error (or was deleted) while `until` lacks that state. */
export class LoadBalancerFailedError extends Error {
  constructor(
    message: string,
    readonly loadBalancer: LoadBalancer,
  ) {
    super(message);
    Object.setPrototypeOf(this, new.target.prototype);
    this.name = "LoadBalancerFailedError";
  }
}

/**
 * waitForLoadBalancer resolves with the load balancer once it is in a state of `until`. It watches
 * the load balancer's events (WatchEvents filtered to it) and reads it again on each; when the
 * stream cannot be opened or fails, it polls getLoadBalancer instead. A load balancer that is gone
 * (NOT_FOUND after it was seen) counts as deleted. UNAVAILABLE answers are ridden out; any other
 * PlatformError rejects the wait.
 */
export async function waitForLoadBalancer(
  client: ComputeClient,
  tenantId: string,
  loadBalancerId: string,
  options: WaitOptions = {},
): Promise<LoadBalancer> {
  const until: readonly string[] = options.until ?? ["ready", "error", "deleted"];
  const pollMs = options.pollIntervalMs ?? 2000;
  const idleMs = options.idleTimeoutMs ?? 45_000;
  const ctl = new AbortController();
  let timedOut = false;
  const deadline =
    options.timeoutMs !== undefined ? setTimeout(() => ((timedOut = true), ctl.abort()), options.timeoutMs) : undefined;
  const onAbort = () => ctl.abort();
  options.signal?.addEventListener("abort", onAbort, { once: true });
  if (options.signal?.aborted) ctl.abort();

  let pending = false;
  let polling = false;
  let wake: (() => void) | undefined;
  const notify = () => {
    pending = true;
    wake?.();
  };
  ctl.signal.addEventListener("abort", notify, { once: true });

  // The stream, beside the reads: any event about the load balancer means "read it again".
  const streamCtl = new AbortController();
  ctl.signal.addEventListener("abort", () => streamCtl.abort(), { once: true });
  void (async () => {
    let idle = setTimeout(() => streamCtl.abort(), idleMs);
    try {
      const stream = client.events.watchEvents({ tenantId, resourceId: loadBalancerId }, { signal: streamCtl.signal, timeoutMs: 0 });
      for await (const m of stream) {
        clearTimeout(idle);
        idle = setTimeout(() => streamCtl.abort(), idleMs);
        if (m.event) notify();
      }
    } catch {
      // refused, cut or silent: the reads go on by polling
    } finally {
      clearTimeout(idle);
      polling = true;
      notify();
    }
  })();

  let last: LoadBalancer | undefined;
  try {
    for (;;) {
      if (ctl.signal.aborted) break;
      pending = false;
      try {
        const { loadBalancer } = await client.loadBalancers.getLoadBalancer({ tenantId, loadBalancerId }, { signal: ctl.signal });
        last = loadBalancer;
      } catch (err) {
        const pe = toPlatformError(err);
        if (ctl.signal.aborted) break;
        if (pe?.code === "NOT_FOUND" && last !== undefined) {
          last = { ...last, state: "deleted" };
        } else if (pe?.code !== "UNAVAILABLE") {
          throw err;
        }
      }
      if (last !== undefined) {
        const state = last.state;
        if (until.includes(state)) return last;
        if (state === "error" || state === "deleted") {
          throw new LoadBalancerFailedError(
            `load balancer ${loadBalancerId} is ${state}${last.lastError ? `: ${last.lastError}` : ""}`,
            last,
          );
        }
      }
      if (!pending) {
        // The poll timer is cleared when something else wakes the loop first (an event, the
        // deadline, the caller's abort): an armed one would hold a Node process up to pollMs.
        await new Promise<void>((resolve) => {
          const poll = polling ? setTimeout(resolve, pollMs) : undefined;
          wake = () => {
            clearTimeout(poll);
            resolve();
          };
        });
        wake = undefined;
      }
    }
    if (timedOut) {
      throw new WaitTimeoutError(
        `load balancer ${loadBalancerId} is ${last?.state ?? "unknown"}, not ${until.join(" or ")}, after ${options.timeoutMs} ms`,
        last,
      );
    }
    throw options.signal?.reason ?? new Error("the wait was aborted");
  } finally {
    clearTimeout(deadline);
    options.signal?.removeEventListener("abort", onAbort);
    streamCtl.abort();
  }
}
