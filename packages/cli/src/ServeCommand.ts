/**
 * `flotta serve`: boots the declared fleet, with the MCP server, the dashboard, the webhooks and the scheduler when
 * the config has them, logs to stderr, and runs until a signal (SIGINT, SIGTERM) closes every agent and the port.
 * State lives in the config's store, else `.flotta/state.db` in the project: what was live when the last serve
 * stopped comes back first, and serve says where state lives and what came back once it is ready.
 */
import { Command, Options } from "@effect/cli"
import { Flotta } from "@flotta/core/Flotta"
import * as Spec from "@flotta/core/Spec"
import { Effect, Layer, Option } from "effect"
import * as Composition from "./Composition.js"
import type * as ConfigFile from "./ConfigFile.js"
import * as ExitCode from "./ExitCode.js"
import * as Output from "./Output.js"
import * as Shared from "./SharedOptions.js"
import * as Views from "./Views.js"

/**
 * Starts the config's sessions (run entries become templates) and says what did not come up. A session the store
 * brought back is live already, with its conversation: it is not started again. The entries the config skipped
 * were told when it was loaded (`setUp`).
 */
export const boot = Effect.fn("ServeCommand.boot")(function*(config: ConfigFile.LoadedConfig) {
  const fleet = yield* Flotta
  const restored = fleet.restored.restored.map((r) => r.name)
  const back = new Set(restored)
  const { fleet: declared } = config.fleet
  const booted = yield* fleet.bootFleet({
    ...declared,
    sessions: declared.sessions.filter((s) => !back.has(s.name)),
    rejected: []
  })
  for (const failed of booted.failed) {
    yield* Output.stderr(`flotta: agent ${failed.name} did not start: ${failed.error.message}`)
  }
  return { ...booted, live: [...restored, ...booted.started] }
})

/** Each entry the config skipped, as a line for stderr: its path and why (`flotta: skipped agents[1].modle: ...`). */
export const skippedLines = (config: ConfigFile.LoadedConfig): ReadonlyArray<string> =>
  config.skipped.map((r) => `flotta: skipped ${Spec.describeRejected(r)}`)

/**
 * How a long-lived command (serve, repl) starts: a signal stops it cleanly, then its config is loaded, each entry
 * it skipped is told (the rest boots), and what the features turn on for it is worked out.
 */
export const setUp = Effect.fn("ServeCommand.setUp")(
  function*(configFlag: Option.Option<string>, features: Composition.Features) {
    yield* ExitCode.signalStopsCleanly
    const config = yield* Shared.loadConfig(configFlag)
    const skipped = skippedLines(config)
    if (skipped.length > 0) yield* Output.stderr(skipped.join("\n"))
    return { config, on: Composition.enabled(config, features) }
  }
)

/** Where state lives and what came back from it, as lines for stderr (`flotta serve: state in ...`). */
export const stateLines = Effect.fn("ServeCommand.stateLines")(function*(prefix: string) {
  const fleet = yield* Flotta
  const info = yield* fleet.store
  return [
    `${prefix}: state in ${Views.describeStore(info)}` +
    (info.health.state === "ok" ? "" : `; the store is ${Views.describeHealth(info.health)}`),
    ...Views.describeRestore(fleet.restored).map((line) => `${prefix}: ${line}`)
  ]
})

/** This node's host, the live hosts and the cluster's store (`flotta serve` in a cluster). */
const clusterView = Effect.gen(function*() {
  const { Cluster } = yield* Effect.promise(() => import("@flotta/cluster/Cluster"))
  const joined = yield* Effect.serviceOption(Cluster)
  if (Option.isNone(joined)) return Option.none()
  const cluster = joined.value
  const hosts = yield* Effect.orElseSucceed(cluster.hosts, () => [])
  return Option.some({ host: cluster.host, live: hosts.filter((h) => h.live).map((h) => h.host), store: cluster.store })
})

/** Which host this node is and how many are live. */
const clusterLines = (view: Option.Option<{ host: string; live: ReadonlyArray<string>; store: string }>) =>
  Option.match(view, {
    onNone: () => [],
    onSome: ({ host, live, store }) => [
      `cluster: host ${host} joined (${live.length} ${live.length === 1 ? "host" : "hosts"} live: ${
        live.join(", ")
      }); state in ${store}`
    ]
  })

/** What the webhooks do here, in words: where notifications go and where triggers are taken. */
export const describeWebhooks = (
  config: ConfigFile.LoadedConfig,
  on: ReturnType<typeof Composition.enabled>,
  server: Option.Option<string>
) => {
  if (!on.webhooks) return "webhooks off"
  const targets = config.notify?.length ?? 0
  const hooks = Option.map(server, (url) => new URL("/hooks/", url).href)
  const triggers = on.mcp || on.dashboard
    ? [
      ...(on.schedule && (config.schedule?.routines.length ?? 0) > 0 ? ["routines/NAME"] : []),
      ...(config.github === undefined ? [] : ["github"])
    ]
    : []
  return [
    `notifications to ${targets} ${targets === 1 ? "target" : "targets"}`,
    ...(triggers.length === 0
      ? []
      : [`triggers at ${Option.getOrElse(hooks, () => "/hooks/")}{${triggers.join(",")}}`])
  ].join(", ")
}

const json = Options.boolean("json").pipe(
  Options.withDescription(
    "Once the fleet is up, also print one line of JSON on stdout: the agents up and those that failed, the " +
      "config's entries skipped (each path and why), the run templates, the MCP and dashboard URLs, whether the " +
      "scheduler and the webhooks run, the store and what came back from it (or, in a cluster, this host, the live " +
      "hosts and the cluster's store). The lines for a person stay on stderr."
  )
)

export const command = Command.make(
  "serve",
  { simulate: Shared.simulate, config: Shared.config, json },
  (flags) =>
    Effect.gen(function*() {
      const features = {
        simulate: flags.simulate,
        mcp: true,
        dashboard: true,
        schedule: true,
        webhooks: true,
        durable: true,
        cluster: true
      }
      const { config, on } = yield* setUp(flags.config, features)
      const program = Effect.gen(function*() {
        const booted = yield* boot(config)
        const mcp = on.mcp ? yield* Composition.mcpUrl : Option.none<string>()
        const dashboard = yield* Composition.dashboardUrl
        const fleet = yield* Flotta
        const { live } = booted
        const cluster = on.cluster ? yield* clusterView : Option.none()
        if (flags.json) {
          yield* Output.stdout(JSON.stringify({
            event: "ready",
            agents: live,
            failed: booted.failed,
            skipped: config.skipped.map(({ message, path }) => ({ path, message })),
            templates: booted.templates,
            mcp: Option.getOrNull(mcp),
            dashboard: Option.getOrNull(dashboard),
            scheduler: on.schedule,
            webhooks: on.webhooks,
            ...(on.cluster
              ? { cluster: Option.getOrNull(cluster) }
              : { store: yield* fleet.store, restored: fleet.restored })
          }))
        }
        // One write, so that whoever waits for the first line gets the rest with it.
        yield* Output.stderr(
          [
            `flotta serve: ${live.length} agent(s) up${live.length > 0 ? ` (${live.join(", ")})` : ""}; ` +
            `MCP ${Option.match(mcp, { onNone: () => "off", onSome: (url) => `at ${url}` })}; ` +
            `dashboard ${Option.getOrElse(Option.map(dashboard, (url) => `at ${url}`), () => "off")}; ` +
            `scheduler ${on.schedule ? "on" : "off"}; ` +
            `${describeWebhooks(config, on, Option.orElse(mcp, () => dashboard))}. ` +
            "Stop with Ctrl-C.",
            ...(on.cluster ? clusterLines(cluster) : yield* stateLines("flotta serve"))
          ].join("\n")
        )
        return yield* Effect.never
      })
      return yield* program.pipe(
        Effect.provide(Composition.layer(config, features)),
        Effect.provide(Layer.unwrapEffect(
          Effect.promise(() => import("@flotta/mcp/Stdio")).pipe(
            Effect.map((Stdio) => Stdio.stderrLogger)
          )
        ))
      )
    })
).pipe(
  Command.withDescription(
    "Boot the configured fleet, with the MCP server, the dashboard, the webhooks and the scheduler when the " +
      "config has them, and run until Ctrl-C or SIGTERM closes every agent. Its state lives in the config's store."
  )
)
