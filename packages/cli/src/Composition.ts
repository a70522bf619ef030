/**
 * The one composition `serve`, `repl`, `mcp` and `run` use: the engine for the config's `fleet` section, and
 * on top of it the MCP server (`mcp` section), the dashboard (`dashboard`), the webhooks (`notify`, `github`,
 * and the routines' triggers) and the scheduler (`schedule`) when the config has them and the command wants
 * them; an absent one is `Layer.empty`, and its package is not even loaded (a one-shot run loads no server, no
 * scheduler and no cluster code). Telemetry (`telemetry`) is beneath them all. With `--simulate`, the
 * children are the real claude CLI pointed at the built-in scripted model on 127.0.0.1 (no account, no spend,
 * nothing of ~/.claude touched). The platform (`NodeContext`) is provided here, at the edge.
 *
 * Where state lives: `serve` and `repl` (`durable`) use the config's `store`, else `.flotta/state.db` in the
 * project directory, and import the run records waiting in its inbox (`RunInbox`); `run` and `mcp` keep theirs in
 * memory, whatever the config says: a one-shot run, and a stdio server each client starts for itself, must never
 * contend with a running serve for its store (one host holds a store at a time). A shell run's record reaches the
 * store through that inbox (see RunRecording).
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as FileSystem from "@effect/platform/FileSystem"
import type { ClusterConfigError } from "@flotta/cluster/ClusterConfig"
import type { StoreUnavailable } from "@flotta/core/Errors"
import * as Flotta from "@flotta/core/Flotta"
import * as Otlp from "@flotta/core/Otlp"
import * as RunInbox from "@flotta/core/RunInbox"
import type { StoreConfig, StoreOptions } from "@flotta/core/Store"
import type { DashboardConfigInput } from "@flotta/dashboard/DashboardConfig"
import * as McpConfig from "@flotta/mcp/McpConfig"
import { Effect, Layer, Option } from "effect"
import type { LoadedConfig } from "./ConfigFile.js"
import * as Output from "./Output.js"
import * as Simulator from "./Simulator.js"
import { inboxOf, storeFor } from "./StoreTarget.js"

/**
 * The child environment of a simulated fleet; the simulator lives as long as the surrounding scope. The CLI's
 * own state (its sessions' conversations) is kept under `root` when given, so that a restarted fleet can resume
 * them; else in a temporary directory that goes with the scope. A command says on stderr that it simulates
 * (`quiet`: a library does not).
 */
export const simulatedEnv = Effect.fn("Composition.simulatedEnv")(
  function*(root?: string, options: { readonly quiet?: boolean } = {}) {
    const simulator = yield* Simulator.start()
    const fs = yield* FileSystem.FileSystem
    if (root !== undefined) yield* fs.makeDirectory(root, { recursive: true })
    const dir = root ?? (yield* fs.makeTempDirectoryScoped({ prefix: "flotta-simulate-" }))
    if (options.quiet !== true) {
      yield* Output.stderr(
        `flotta: simulating: claude talks to a scripted model at ${simulator.url} (no account, no cost)`
      )
    }
    // A subscription-style login: the CLI then reads the usage limiter's headers, so `LIMIT <s> <text>` parks.
    return yield* Simulator.offlineEnv(simulator.url, dir, "subscription")
  }
)

/**
 * Where a simulated fleet keeps the CLI's state: beside an SQLite store (`state.db.simulate/`, which the
 * `.gitignore` line `flotta init` writes covers too), so that the sessions the store brings back can resume.
 */
export const simulationRoot = (store: StoreConfig): string | undefined =>
  store !== "memory" && "sqlite" in store ? `${store.sqlite}.simulate` : undefined

/** The store's options: its retention, from the config. */
export const storeOptions = (config: LoadedConfig): StoreOptions =>
  config.store?.retainDays === undefined ? {} : { retainDays: config.store.retainDays }

/** The engine's options for a config, with the children's extra environment. */
export const fleetOptions = (
  config: LoadedConfig,
  env: Record<string, string>,
  durable = false
): Flotta.FleetOptions => ({
  env,
  store: storeFor(config, durable),
  storeOptions: storeOptions(config),
  ...(config.fleet.claudePath === undefined ? {} : { claudePath: config.fleet.claudePath }),
  ...(config.fleet.maxConcurrentStarts === undefined ? {} : { maxConcurrentStarts: config.fleet.maxConcurrentStarts }),
  ...(config.fleet.approvalTimeout === undefined ? {} : { approvalTimeout: config.fleet.approvalTimeout }),
  ...(config.fleet.maxLive === undefined ? {} : { maxLive: config.fleet.maxLive }),
  ...(config.fleet.hibernateAfter === undefined ? {} : { hibernateAfter: config.fleet.hibernateAfter }),
  ...(config.fleet.autoCompactAt === undefined ? {} : { autoCompactAt: config.fleet.autoCompactAt })
})

export interface Features {
  readonly simulate: boolean
  /** Serve the config's `mcp` section over HTTP (when it has one). */
  readonly mcp?: boolean
  /** Serve the config's `dashboard` section (when it has one). */
  readonly dashboard?: boolean
  /** Run the config's scheduler (when it has a `schedule`). */
  readonly schedule?: boolean
  /** Send the config's notifications and take its triggers (`notify`, `github`, routines on a server). */
  readonly webhooks?: boolean
  /** Keep state in the config's store, else the default file (serve, repl); otherwise in memory. */
  readonly durable?: boolean
  /** Join the config's cluster (when it has one): the fleet spans every node of it. */
  readonly cluster?: boolean
}

/** What a composition switched on, for the command to report. */
export const enabled = (config: LoadedConfig, features: Features) => {
  const mcp = features.mcp === true && config.mcp !== undefined
  const dashboard = features.dashboard === true && config.dashboard !== undefined
  const schedule = features.schedule === true && config.schedule !== undefined
  // Triggers need a server to listen on; notifications go out without one.
  const served = mcp || dashboard
  const triggers = served && (config.github !== undefined || (schedule && config.schedule!.routines.length > 0))
  return {
    mcp,
    dashboard,
    schedule,
    webhooks: features.webhooks === true && (config.notify !== undefined || triggers),
    cluster: features.cluster === true && config.cluster !== undefined
  }
}

/**
 * Where the configured dashboard will be, for the notifications' links: `http://<host>:<port>/` from the
 * `dashboard` section, or the MCP server's it shares; none without a dashboard, or on a port chosen at start (0).
 */
export const configuredDashboardUrl = (
  config: LoadedConfig,
  on: { readonly mcp: boolean; readonly dashboard: boolean }
): string | undefined => {
  const dashboard = config.dashboard
  if (!on.dashboard || dashboard === undefined) return undefined
  const shared = dashboard.port === undefined && on.mcp && config.mcp !== undefined
  const port = shared ? config.mcp!.port ?? McpConfig.DEFAULT_PORT : dashboard.port ?? McpConfig.DEFAULT_PORT
  const host = (shared ? config.mcp!.host : dashboard.host) ?? McpConfig.DEFAULT_HOST
  if (port === 0) return undefined
  return `http://${host.includes(":") ? `[${host}]` : host}:${port}/`
}

/**
 * A feature's layer, from its package loaded only when the feature is on (else `Layer.empty`). Its services are
 * reached with `Effect.serviceOption` (see `dashboardUrl`), as a feature the config may leave out should be.
 */
const feature = <E, R>(
  on: boolean,
  make: () => Promise<Layer.Layer<never, E, R>>
): Effect.Effect<Layer.Layer<never, E, R>> => on ? Effect.promise(make) : Effect.succeed(Layer.empty)

/**
 * The engine, with the scheduler, the webhooks, the dashboard and the MCP server on top when the config has them
 * and `features` asks. Telemetry (`Otlp.layer`) is beneath it all: every span is exported, and the last are
 * flushed once all else has closed.
 */
export const layer = (config: LoadedConfig, features: Features) =>
  Layer.unwrapScoped(Effect.gen(function*() {
    const on = enabled(config, features)
    // In a cluster the shared state is the cluster store's: each node's engine keeps only its own, in memory.
    const durable = features.durable === true && !on.cluster
    const env = features.simulate ? yield* simulatedEnv(simulationRoot(storeFor(config, durable))) : {}
    // A durable fleet is its store's host: it imports the shell runs' records waiting in the store's inbox.
    const inbox = durable ? inboxOf(storeFor(config, true), config.dir) : undefined
    const engineOnly = Flotta.layer(fleetOptions(config, env, durable))
    const local = inbox === undefined ? engineOnly : RunInbox.layer(inbox).pipe(Layer.provideMerge(engineOnly))
    const engine: Layer.Layer<
      Layer.Layer.Success<typeof local>,
      Layer.Layer.Error<typeof local> | ClusterConfigError | StoreUnavailable,
      Layer.Layer.Context<typeof local>
    > = on.cluster
      ? yield* Effect.promise(() => import("@flotta/cluster/Cluster")).pipe(
        Effect.map((Cluster) =>
          Cluster.layer(config.cluster, { baseDir: config.dir, env }).pipe(Layer.provideMerge(local))
        )
      )
      : local
    const mcp = on.mcp ? config.mcp : undefined
    // The MCP server and the dashboard are built over the scheduler: they run on the context they capture when
    // they start, so that is where they find the scheduler (or, when it is off, answer SchedulerNotEnabled).
    const server = yield* feature(mcp !== undefined, () =>
      import("@flotta/mcp/McpServer").then((McpServer) => McpServer.layer(mcp!)))
    const dashboard = yield* feature(
      on.dashboard && config.dashboard !== undefined,
      () =>
        dashboardLayer(config.dashboard!, mcp)
    )
    // The webhooks mount their routes on the MCP server and the dashboard (so they sit below both), and fire
    // the scheduler's routines (so they sit above it).
    const webhooks = yield* feature(on.webhooks, () =>
      import("@flotta/webhooks/Webhooks").then((Webhooks) =>
        Webhooks.layer({
          notify: config.notify,
          github: config.github,
          dashboardUrl: configuredDashboardUrl(config, on)
        })
      ))
    const scheduler = yield* feature(
      on.schedule && config.schedule !== undefined,
      () =>
        import("@flotta/scheduler/Scheduler").then(({ Scheduler }) =>
          Scheduler.layer(config.schedule!)
        )
    )
    return server.pipe(
      Layer.provideMerge(dashboard),
      Layer.provideMerge(webhooks),
      Layer.provideMerge(scheduler),
      Layer.provideMerge(engine)
    )
  })).pipe(Layer.provide(Otlp.layer(config.telemetry)), Layer.provide(NodeContext.layer))

/**
 * The dashboard: on the MCP server's port at `/` when its section names no port and MCP is on (it then inherits
 * the MCP server's host, token and allowed names, and contributes its routes, which the MCP server mounts to
 * answer every path but `/mcp`); else on its own server (without MCP, at the MCP defaults).
 */
const dashboardLayer = (dashboard: DashboardConfigInput, mcp: McpConfig.McpConfigInput | undefined) =>
  import("@flotta/dashboard/Dashboard").then((Dashboard) =>
    dashboard.port !== undefined || mcp === undefined
      ? Dashboard.layer(dashboard)
      : Layer.unwrapEffect(Effect.map(McpConfig.make(mcp), (server) => Dashboard.shared(dashboard, server)))
  )

/** The MCP server's address, when one runs. */
export const mcpUrl: Effect.Effect<Option.Option<string>> = Effect.gen(function*() {
  const { McpServer } = yield* Effect.promise(() => import("@flotta/mcp/McpServer"))
  return Option.map(yield* Effect.serviceOption(McpServer), (server) => server.url)
})

/** The dashboard's address, when one runs: its own, or `/` of the MCP server it shares. */
export const dashboardUrl: Effect.Effect<Option.Option<string>> = Effect.gen(function*() {
  const { Dashboard } = yield* Effect.promise(() => import("@flotta/dashboard/Dashboard"))
  const dashboard = yield* Effect.serviceOption(Dashboard)
  if (Option.isNone(dashboard)) return Option.none<string>()
  if (Option.isSome(dashboard.value.url)) return dashboard.value.url
  return Option.map(yield* mcpUrl, (url) => new URL("/", url).href)
})
