// A resumable WatchEvents: remembers its cursor, skips heartbeats, reconnects after cuts and silence.

import { Code, ConnectError } from "@connectrpc/connect";
import type { ComputeClient } from "./client.js";
import type { Event } from "./gen/bettercompute/compute/v1/events_pb.js";
import { PlatformError } from "./errors.js";
import { backoffMs, hasPlatformInfo, isTransient, sleep } from "./retry.js";

/** WatchRequest: the tenant, where to start, and the filters (all as WatchEventsRequest has them). */
export interface WatchRequest {
  tenantId: string;
  /** Events with a cursor greater than this (default 0: from the start). */
  after?: bigint;
  /** Only events about this resource. */
  resourceId?: string;
  /** Only events of these types (e.g. "providerLoadBalancer.ready"). */
  types?: string[];
}

/** WatchOptions tunes an EventWatcher. */
export interface WatchOptions {
  /** Ends the watch (the loop then just ends). */
  signal?: AbortSignal;
  /** A stream with no message (event or heartbeat) this long is taken for dead and reopened (default 45000: three heartbeats). */
  idleTimeoutMs?: number;
  /** The pause before a reconnect, doubled each failure in a row, jittered (defaults 200 and 5000). */
  initialBackoffMs?: number;
  maxBackoffMs?: number;
}

/**
 * streamCut: a failure another stream may not share. Platform refusals (a removed permission, a
 * revoked token, bad filters) carry ErrorInfo and are final, except UNAVAILABLE; a failure without
 * one is the connection's (a cut mid-stream, a replica going away).
 */
function streamCut(err: unknown): boolean {
  if (hasPlatformInfo(err)) return isTransient(err);
  const code = err instanceof PlatformError ? err.connectCode : err instanceof ConnectError ? err.code : undefined;
  return (
    code === Code.Unknown ||
    code === Code.Internal ||
    code === Code.Unavailable ||
    code === Code.DeadlineExceeded ||
    code === Code.Canceled ||
    code === Code.Aborted ||
    code === Code.DataLoss
  );
}

/**
 * EventWatcher is an async iterable of a tenant's events that survives its streams: it remembers
 * the cursor of the last event it delivered (and of heartbeats, which move it past what the
 * filters leave out) and, when a stream is cut, fails UNAVAILABLE or stays silent too long, opens
 * a new one from there. No event is delivered twice, none skipped; heartbeats are never delivered.
 * A final failure (PERMISSION_DENIED, UNAUTHENTICATED, INVALID_INPUT) is thrown by the loop.
 *
 *   const w = watchEvents(client, { tenantId, resourceId: lb.id });
 *   for await (const ev of w) { ... }   // w.cursor: where to resume later
 */
export class EventWatcher implements AsyncIterable<Event> {
  /** How far the watcher has read: pass it as `after` to resume. */
  cursor: bigint;
  /** Streams opened after the first. */
  reconnects = 0;
  readonly #client: ComputeClient;
  readonly #req: WatchRequest;
  readonly #options: WatchOptions;

  constructor(client: ComputeClient, req: WatchRequest, options: WatchOptions = {}) {
    this.#client = client;
    this.#req = { ...req, ...(req.types ? { types: [...req.types] } : {}) };
    this.#options = options;
    this.cursor = req.after ?? 0n;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Event, void, undefined> {
    const idleMs = this.#options.idleTimeoutMs ?? 45_000;
    const initial = this.#options.initialBackoffMs ?? 200;
    const cap = this.#options.maxBackoffMs ?? 5000;
    const outer = this.#options.signal;
    let failures = 0;
    for (let opened = 0; ; opened++) {
      if (outer?.aborted) return;
      if (opened > 0) this.reconnects++;
      const ctl = new AbortController();
      const onAbort = () => ctl.abort();
      outer?.addEventListener("abort", onAbort, { once: true });
      let idled = false;
      let timer = setTimeout(() => ((idled = true), ctl.abort()), idleMs);
      let progressed = false;
      let failure: unknown = undefined;
      try {
        // timeoutMs 0: no deadline, whatever the client's defaultTimeoutMs (a watch runs until stopped).
        const stream = this.#client.events.watchEvents({ ...this.#req, after: this.cursor }, { signal: ctl.signal, timeoutMs: 0 });
        for await (const m of stream) {
          clearTimeout(timer);
          timer = setTimeout(() => ((idled = true), ctl.abort()), idleMs);
          progressed = true;
          if (m.heartbeat) {
            if (m.heartbeat.cursor > this.cursor) this.cursor = m.heartbeat.cursor;
            continue;
          }
          const ev = m.event;
          if (!ev || ev.cursor <= this.cursor) continue;
          this.cursor = ev.cursor;
          yield ev;
        }
      } catch (err) {
        failure = err;
      } finally {
        clearTimeout(timer);
        outer?.removeEventListener("abort", onAbort);
        ctl.abort(); // the consumer broke out, or the stream is over: close it
      }
      if (outer?.aborted) return;
      if (progressed) failures = 0;
      if (failure !== undefined && !idled && !streamCut(failure)) throw failure;
      failures++;
      if (failures > 1 && !idled && !(await sleep(backoffMs(initial, cap, failures), outer))) return;
    }
  }
}

/** watchEvents returns a resumable watch of req's tenant (see EventWatcher). */
export function watchEvents(client: ComputeClient, req: WatchRequest, options: WatchOptions = {}): EventWatcher {
  return new EventWatcher(client, req, options);
}
