/**
 * `flotta run --detach` (or `--serve`): the run is started inside the running `flotta serve`, over its MCP endpoint
 * (`flotta_run`, which returns at once), with the options the shell run would have had. Its name goes to stdout, and
 * how to follow it to stderr; it is the serve's run from then on (`flotta runs NAME`, `flotta diff NAME`, the
 * dashboard). No serve answering is the client commands' ServerUnreachable, a refusal the serve's own error.
 */
import type { RunOptions } from "@flotta/core/Run"
import { Duration, Effect, Option } from "effect"
import * as Answers from "./Answers.js"
import type { Connection } from "./Connection.js"
import { call, clientConfig, connectTo, endpointOf } from "./Connection.js"
import * as Output from "./Output.js"
import { invalid } from "./SharedOptions.js"

/** The flags a detached run cannot honour, each refused with why (null: none). */
export const refusal = (
  flags: { readonly asks: boolean; readonly simulate: boolean; readonly permissionAsk: boolean }
) => {
  if (flags.asks) {
    return invalid(
      flags.permissionAsk ? "--permission" : "--ask",
      "asks you at this terminal, and a detached run has none: give its tools with --allow, or start it over MCP " +
        "(flotta_run) with the permission's ask and decide with `flotta approve`"
    )
  }
  if (flags.simulate) {
    return invalid("--simulate", "the serve runs the run with its own model: start the serve with --simulate instead")
  }
  return null
}

/** The flags that reach a serve, refused without --detach. */
export const needsDetach = (flags: Pick<Connection, "url" | "token">) => {
  const given = Option.isSome(flags.url) ? "--url" : Option.isSome(flags.token) ? "--token" : undefined
  return given === undefined ? null : invalid(given, "reaches a running serve, for a detached run: add --detach")
}

/** A run's options as `flotta_run`'s arguments. */
export const runArgs = (options: RunOptions): Record<string, unknown> => {
  const { env: _env, onActivity: _onActivity, timeout, ...rest } = options
  return {
    ...rest,
    ...(timeout === undefined ? {} : { timeoutSeconds: Duration.toSeconds(Duration.decode(timeout)) })
  }
}

/** Starts `options` in the serve the connection flags reach; prints its name, and how to follow it. */
export const start = Effect.fn("DetachedRun.start")(function*(flags: Connection, options: RunOptions) {
  return yield* Effect.scoped(Effect.gen(function*() {
    const endpoint = endpointOf(flags, yield* clientConfig(flags))
    const client = yield* connectTo(endpoint)
    const started = yield* call(client, "flotta_run", runArgs(options), Answers.Started)
    yield* Output.stdout(flags.json ? JSON.stringify(started, null, 2) : started.name)
    const worktree = options.worktree !== undefined && options.worktree !== false
    yield* Output.stderr(
      `flotta: ${started.name} runs in the serve at ${endpoint.url}: \`flotta runs ${started.name}\` says how it ` +
        `stands and its outcome once it ends` + (worktree ? `, \`flotta diff ${started.name}\` what it changed` : "")
    )
  }))
})
