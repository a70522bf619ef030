/**
 * The fleet's MCP server over Streamable HTTP: one endpoint, `http://<host>:<port>/mcp`, serving the
 * 2026-07-28 revision and the 2025-era ones side by side (see McpHandler), on the fleet's one HTTP stack
 * (`Http.serve`), with whatever the packages contribute (`Http.Contributions`: the dashboard, the webhooks' routes). `layer(config)` runs it for as long as the layer's scope lives and closes the port, the
 * sessions and every open stream when it ends; `layer(undefined)` (a config without an `mcp` section) is
 * `Layer.empty`: no port is opened.
 */
import type { Flotta } from "@flotta/core/Flotta"
import * as Http from "@flotta/core/Http"
import { Context, Effect, Layer, Option } from "effect"
import * as McpConfig from "./McpConfig.js"
import * as McpHandler from "./McpHandler.js"

export class McpServer extends Context.Tag("@flotta/mcp/McpServer")<McpServer, {
  /** The endpoint, e.g. `http://127.0.0.1:4099/mcp`. */
  readonly url: string
  readonly host: string
  /** The bound port (the real one when the config asked for 0). */
  readonly port: number
  /** The same handler the socket serves, for in-process use. */
  readonly handler: McpHandler.McpHandler
}>() {}

/** Serves the settings' endpoint until the scope closes. */
export const serve = Effect.fn("McpServer.serve")(function*(settings: McpConfig.McpSettings) {
  const handler = yield* McpHandler.make(settings)
  // What the packages contribute (`Http.Contributions`), each behind its guard: a contribution that answers the
  // paths no route takes (the dashboard sharing this port) goes first, so its `notFound` answers them.
  const mounted = yield* Http.mountedOn(settings)
  const bound = yield* Http.serve([...mounted.root, handler.routes, ...mounted.rest], {
    port: settings.port,
    host: settings.host,
    // Bounds on receiving a request (not on answering it: a wait streams its answer for up to 50 s).
    requestTimeout: 60_000,
    fail: (reason) =>
      new McpConfig.McpConfigError({ reason: `${reason}: stop the other server or set mcp.port (FLOTTA_MCP_PORT)` })
  })
  const url = `${bound.origin}${McpConfig.PATH}`
  yield* Effect.logInfo(`MCP server listening on ${url}`).pipe(
    Effect.annotateLogs({ auth: Option.isSome(settings.token) ? "bearer token" : "none (loopback only)" })
  )
  return { url, host: bound.host, port: bound.port, handler }
})

/** The server with these settings, for as long as the layer lives; nothing at all without settings. */
export function layer(
  config: McpConfig.McpConfigInput
): Layer.Layer<McpServer, McpConfig.McpConfigError, Flotta>
export function layer(
  config: McpConfig.McpConfigInput | undefined
): Layer.Layer<never, McpConfig.McpConfigError, Flotta>
export function layer(config: McpConfig.McpConfigInput | undefined) {
  return config === undefined ? Layer.empty : Layer.scoped(McpServer, Effect.flatMap(McpConfig.make(config), serve))
}
