/**
 * The live dashboard as a Layer, on only when the config has a `dashboard` section. With a port of its own it
 * listens for as long as the layer lives (`layer`); without one it shares the MCP server's port (`shared`):
 * it then contributes its routes (`Http.Contributions`), which the MCP server mounts beside `/mcp`.
 */
import type { Flotta } from "@flotta/core/Flotta"
import * as Http from "@flotta/core/Http"
import { Context, Effect, Layer, Option } from "effect"
import * as DashboardConfig from "./DashboardConfig.js"
import * as Server from "./Server.js"

export class Dashboard extends Context.Tag("@flotta/dashboard/Dashboard")<Dashboard, {
  /** The page's address when the dashboard has its own port (`http://127.0.0.1:4100/`); none when shared. */
  readonly url: Option.Option<string>
  /** The dashboard's routes, each behind its guard: what the server (its own, or the MCP one) serves. */
  readonly handle: Http.Routes
}>() {}

/** Serves the settings on their own port until the scope closes. */
export const serve = Effect.fn("Dashboard.serve")(function*(settings: DashboardConfig.DashboardSettings) {
  const handle = yield* Server.make(settings)
  const mounted = yield* Http.mountedOn(settings)
  const bound = yield* Http.serve([handle, ...mounted.root, ...mounted.rest], {
    port: settings.port,
    host: settings.host,
    fail: (reason) =>
      new DashboardConfig.DashboardConfigError({ reason: `${reason}: stop the other server or set dashboard.port` })
  })
  const url = `${bound.origin}/`
  yield* Effect.logInfo(`dashboard at ${url}`).pipe(
    Effect.annotateLogs({ auth: Option.isSome(settings.token) ? "token" : "none (loopback only)" })
  )
  return { url: Option.some(url), handle }
})

/** The dashboard on its own port, for as long as the layer lives; nothing at all without a config. */
export function layer(
  config: DashboardConfig.DashboardConfigInput
): Layer.Layer<Dashboard, DashboardConfig.DashboardConfigError, Flotta>
export function layer(
  config: DashboardConfig.DashboardConfigInput | undefined
): Layer.Layer<never, DashboardConfig.DashboardConfigError, Flotta>
export function layer(config: DashboardConfig.DashboardConfigInput | undefined) {
  return config === undefined
    ? Layer.empty
    : Layer.scoped(Dashboard, Effect.flatMap(DashboardConfig.make(config), serve))
}

/**
 * The dashboard's routes only, contributed (`Http.Contributions`) to the server described by `server` (the MCP one),
 * where they answer every path no other route takes.
 */
export const shared = (
  config: DashboardConfig.DashboardConfigInput,
  server: DashboardConfig.SharedServer
): Layer.Layer<Dashboard, DashboardConfig.DashboardConfigError, Flotta | Http.Contributions> => {
  const dashboard = Layer.scoped(
    Dashboard,
    Effect.gen(function*() {
      const settings = yield* DashboardConfig.make(config, server)
      return { url: Option.none(), handle: yield* Server.make(settings) }
    })
  )
  const mounted = Http.contribute(
    Effect.map(Dashboard, (d): Http.Contribution => ({ name: "dashboard", root: true, routes: () => d.handle }))
  )
  return Layer.provideMerge(mounted, dashboard)
}
