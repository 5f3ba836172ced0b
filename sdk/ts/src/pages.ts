// Paging through lists: every list takes pageSize and pageToken and answers nextPageToken while
// more follow. pages() turns that into one async iterable of items.

/**
 * pages calls list with req, yields each item that items picks from the answer, and calls again
 * with the answer's nextPageToken until there is none; req itself is never changed. Breaking out
 * of the loop stops the calls.
 *
 *   for await (const lb of pages(client.loadBalancers.listLoadBalancers, { tenantId, pageSize: 200 }, (r) => r.loadBalancers)) { ... }
 */
export async function* pages<Req extends object, Resp extends { nextPageToken: string }, Item>(
  list: (req: Req & { pageToken?: string }) => Promise<Resp>,
  req: Req,
  items: (resp: Resp) => readonly Item[],
): AsyncGenerator<Item, void, undefined> {
  let token: string | undefined = (req as { pageToken?: string }).pageToken;
  for (;;) {
    const resp: Resp = await list(token ? { ...req, pageToken: token } : req);
    yield* items(resp);
    if (!resp.nextPageToken) {
      return;
    }
    token = resp.nextPageToken;
  }
}
