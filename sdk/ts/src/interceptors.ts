// The interceptor every SDK transport installs: the bearer credential on each request.

import type { Interceptor } from "@connectrpc/connect";

/** TokenSource is a bearer token, or a function returning the current one (for rotating tokens). */
export type TokenSource = string | (() => string | Promise<string>);

/** bearerAuth sets `Authorization: Bearer <token>` on every request. */
export function bearerAuth(token: TokenSource): Interceptor {
  return (next) => async (req) => {
    const value = typeof token === "function" ? await token() : token;
    req.header.set("Authorization", `Bearer ${value}`);
    return next(req);
  };
}
