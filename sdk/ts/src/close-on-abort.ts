// closeOnAbort: a response body that closes when its call's signal aborts, whatever the fetch does.
//
// Connect closes a call only through the signal it hands to fetch (its stream iterators have no
// return()), so a body the fetch no longer ties to that signal stays open: its connection, and with
// it a Node process, lives on after the call was stopped. Node's fetch (undici 6, Node 20) is such a
// fetch: a Request follows the caller's signal through a WeakRef to its own AbortController, and
// once a garbage collection took the Request (a streamed POST's Request is unreachable as soon as
// the response arrived), aborting the signal no longer reaches the fetch. A fetch wrapper that
// drops the signal does the same. The body handed on here is read through a reader of the real
// one, and the signal's abort cancels that reader, which closes the connection in every fetch.

const nullBodyStatus = new Set([101, 103, 204, 205, 304]);

/** closeOnAbort wraps fetchFn so each response body is cancelled once the call's signal aborts. */
export function closeOnAbort(fetchFn: typeof globalThis.fetch): typeof globalThis.fetch {
  return async (input, init) => {
    const res = await fetchFn(input, init);
    const signal = init?.signal;
    if (!signal || !res.body || nullBodyStatus.has(res.status)) return res;
    const reader = res.body.getReader();
    let finished = false;
    let onAbort: (() => void) | undefined;
    const finish = () => {
      finished = true;
      if (onAbort) signal.removeEventListener("abort", onAbort);
      onAbort = undefined;
    };
    const body = new ReadableStream<Uint8Array>({
      start(ctl) {
        onAbort = () => {
          if (finished) return;
          finish();
          const reason: unknown = signal.reason;
          ctl.error(reason);
          reader.cancel(reason).catch(() => {});
        };
        if (signal.aborted) onAbort();
        else signal.addEventListener("abort", onAbort, { once: true });
      },
      async pull(ctl) {
        let chunk: ReadableStreamReadResult<Uint8Array>;
        try {
          chunk = await reader.read();
        } catch (err) {
          if (!finished) {
            finish();
            ctl.error(err);
          }
          return;
        }
        if (finished) return; // aborted while this read was pending: the stream is errored already
        if (chunk.done) {
          finish();
          ctl.close();
        } else {
          ctl.enqueue(chunk.value);
        }
      },
      cancel(reason) {
        finish();
        return reader.cancel(reason);
      },
    });
    return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}
