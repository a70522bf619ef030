/**
 * Commands that drive a running `flotta serve` over its MCP endpoint: list, status, ask, prompt, result,
 * reports, transcript, close. The endpoint is `--url`, else the decoded config's `mcp` section (with its
 * environment variables, FLOTTA_MCP_PORT / FLOTTA_MCP_HOST, applied), else 127.0.0.1:4099; the token is
 * `--token`, else the config's (FLOTTA_MCP_TOKEN overrides it).
 *
 * `reports` and `transcript` also read the store itself, read-only (no lock, so beside a running serve too):
 * with `--store`, or when no serve answers and the config's store (the default `.flotta/state.db` included) is an
 * SQLite file that exists.
 */
import { Args, Command, Options } from "@effect/cli"
import type { TurnRecord } from "@flotta/core/Agent"
import type { ReportEntry, StoreHealth, StoreShape } from "@flotta/core/Store"
import * as McpConfig from "@flotta/mcp/McpConfig"
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client"
import { Effect, Either, Option, Redacted, Schema } from "effect"
import * as Composition from "./Composition.js"
import * as ConfigFile from "./ConfigFile.js"
import * as Flags from "./Flags.js"
import * as Output from "./Output.js"
import * as Shared from "./SharedOptions.js"
import * as StoreAccess from "./StoreAccess.js"
import * as Views from "./Views.js"

/** No server answered at the endpoint. */
export class ServerUnreachable extends Schema.TaggedError<ServerUnreachable>()("ServerUnreachable", {
  url: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `no flotta server answered at ${this.url} (${this.reason}): start one with \`flotta serve\`, or pass --url`
  }
}

/** The server refused a tool call with a typed failure; `_tag` is the fleet's own (AgentNotFound, ...). */
export class ToolFailed extends Schema.TaggedError<ToolFailed>()("ToolFailed", {
  tool: Schema.String,
  error: Schema.Struct({ _tag: Schema.String, message: Schema.String }),
  text: Schema.String
}) {
  override get message() {
    return this.text
  }
}

export const connection = {
  url: Flags.url("url").pipe(
    Options.withDescription("The server's MCP endpoint (default: from the config, else http://127.0.0.1:4099/mcp)"),
    Options.optional
  ),
  token: Options.redacted("token").pipe(
    Options.withPseudoName("token"),
    Options.withDescription("Bearer token, kept secret (default: FLOTTA_MCP_TOKEN, else the config's mcp.token)"),
    Options.optional
  ),
  json: Options.boolean("json").pipe(Options.withDescription("Print the server's structured answer as JSON")),
  config: Shared.config
}

export type Connection = {
  readonly url: Option.Option<string>
  readonly token: Option.Option<Redacted.Redacted<string>>
  readonly json: boolean
  readonly config: Option.Option<string>
}

/** The config as the client commands read it: the `mcp` section assumed, so its variables always apply. */
const clientConfig = (flags: Pick<Connection, "config">) =>
  ConfigFile.load(process.cwd(), Option.getOrUndefined(flags.config), { assume: ["mcp"] })

/** The endpoint and token this command should use: the flags, else the config's `mcp` section and its variables. */
const endpointOf = (
  flags: Pick<Connection, "url" | "token">,
  config: ConfigFile.LoadedConfig
) => {
  const mcp = config.mcp ?? {}
  const host = mcp.host ?? McpConfig.DEFAULT_HOST
  const port = mcp.port ?? McpConfig.DEFAULT_PORT
  const url = Option.getOrElse(
    flags.url,
    () => `http://${host.includes(":") ? `[${host}]` : host}:${port}${McpConfig.PATH}`
  )
  const token = Option.orElse(
    Option.map(flags.token, Redacted.value),
    () => Option.map(Option.fromNullable(mcp.token), (t) => (typeof t === "string" ? t : Redacted.value(t)))
  )
  return { url, token }
}

/** A connected client for the duration of the scope. */
const connect = (flags: Connection) =>
  Effect.flatMap(clientConfig(flags), (config) => connectTo(endpointOf(flags, config)))

/** A client connected to `url` for the duration of the scope. */
const connectTo = ({ token, url }: { readonly url: string; readonly token: Option.Option<string> }) =>
  Effect.acquireRelease(
    Effect.tryPromise({
      try: () => {
        const client = new Client({ name: "flotta-cli", version: "0.1.0" })
        const headers: Record<string, string> = Option.isSome(token) ? { authorization: `Bearer ${token.value}` } : {}
        const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } })
        return client.connect(transport).then(() => client)
      },
      catch: (e) => new ServerUnreachable({ url, reason: e instanceof Error ? e.message : String(e) })
    }),
    (client) => Effect.promise(() => client.close().catch(() => undefined))
  )

interface ToolResult {
  readonly isError?: boolean
  readonly content: ReadonlyArray<{ readonly type: string; readonly text?: string }>
  readonly structuredContent?: Record<string, unknown>
}

/** Calls one tool; a typed failure becomes ToolFailed (its exit code is the failure's own). */
export const call = (client: Client, tool: string, args: Record<string, unknown>) =>
  Effect.tryPromise({
    try: () => client.callTool({ name: tool, arguments: args }, { timeout: 120_000 }) as Promise<ToolResult>,
    catch: (e) => new ServerUnreachable({ url: "the server", reason: e instanceof Error ? e.message : String(e) })
  }).pipe(
    Effect.flatMap((result) => {
      const text = result.content.map((block) => block.text ?? "").join("\n")
      if (result.isError === true) {
        const error = (result.structuredContent?.["error"] as { _tag: string; message: string } | undefined) ??
          { _tag: "ToolFailed", message: text }
        return Effect.fail(new ToolFailed({ tool, error, text }))
      }
      return Effect.succeed(result.structuredContent ?? {})
    })
  )

/** Report kinds the report log gives the store's health changes (its entries' agent is `store`). */
const STORE_KINDS = ["store_degraded", "store_recovered"] as const

/**
 * The store's health as a running serve sees it: degraded when its latest health entry says so (a read-only
 * reader of the file cannot know: the writes that fail are the serve's). None when it is ok, or unknown.
 */
export const liveStoreHealth = (client: Client) =>
  Effect.gen(function*() {
    let cursor = 0
    let latest: ReportEntry | undefined
    while (true) {
      const page = yield* call(client, "flotta_reports", { agent: "store", kinds: STORE_KINDS, cursor, limit: 10_000 })
      const entries = page["entries"] as ReadonlyArray<ReportEntry>
      latest = entries[entries.length - 1] ?? latest
      cursor = page["next"] as number
      if (entries.length < 10_000) break
    }
    return latest?.kind === "store_degraded" ? Option.some(latest.data as StoreHealth) : Option.none<StoreHealth>()
  }).pipe(Effect.orElseSucceed(() => Option.none<StoreHealth>()))

/**
 * The store's health through the serve a config points at, if one answers (only a config with an `mcp`
 * section serves over HTTP): for `doctor`. None when no serve answers.
 */
export const serveStoreHealth = (config: ConfigFile.LoadedConfig) =>
  config.mcp === undefined
    ? Effect.succeed(Option.none<{ readonly url: string; readonly health: Option.Option<StoreHealth> }>())
    : Effect.scoped(Effect.gen(function*() {
      const endpoint = endpointOf({ url: Option.none(), token: Option.none() }, config)
      const client = yield* connectTo(endpoint)
      return Option.some({ url: endpoint.url, health: yield* liveStoreHealth(client) })
    })).pipe(Effect.orElseSucceed(() => Option.none()))

/**
 * Runs a command body with a client, printing JSON instead when `--json` is set; with `storeHealth`, a degraded
 * store gets a line of its own after the answer.
 */
export const withClient = <A extends Record<string, unknown>>(
  flags: Connection,
  body: (client: Client) => Effect.Effect<A, ToolFailed | ServerUnreachable>,
  render: (value: A) => string,
  options: { readonly storeHealth?: boolean } = {}
) =>
  Effect.scoped(
    Effect.gen(function*() {
      const client = yield* connect(flags)
      const value = yield* body(client)
      if (flags.json) return yield* Output.stdout(JSON.stringify(value, null, 2))
      yield* Output.stdout(render(value))
      if (options.storeHealth === true) {
        const health = yield* liveStoreHealth(client)
        if (Option.isSome(health)) yield* Output.stdout(`store: ${Views.describeHealth(health.value)}`)
      }
    })
  )

interface AgentRow {
  readonly name: string
  readonly status: string
  readonly parkedUntil?: string | null
  readonly model: string | null
  readonly queued: number
  readonly totals: { readonly turns: number; readonly costUsd: number }
  /** In a cluster: the host that runs it. */
  readonly host?: string
}

const name = Flags.nameArgument("name", "The agent's name")
const text = Flags.textArgument("text", "The prompt: what the agent should do")

const list = Command.make(
  "list",
  connection,
  (flags) =>
    withClient(flags, (client) => call(client, "flotta_list", {}), (value) => {
      const agents = (value["agents"] ?? []) as ReadonlyArray<AgentRow>
      if (agents.length === 0) return "no agents"
      // The status column is as wide as its longest entry (`waiting_approval`, `parked until …`).
      const statuses = agents.map((a) => Views.describeStatus(a))
      const width = Math.max(10, ...statuses.map((status) => status.length))
      return agents.map((a, i) =>
        `${a.name.padEnd(24)} ${statuses[i]!.padEnd(width)} ${String(a.model ?? "-").padEnd(12)} ` +
        `queued ${a.queued}  turns ${a.totals.turns}  $${a.totals.costUsd.toFixed(4)}` +
        (a.host === undefined ? "" : `  on ${a.host}`)
      ).join("\n")
    }, { storeHealth: true })
).pipe(Command.withDescription("List the live agents of a running `flotta serve` (and the store, when degraded)"))

const status = Command.make("status", { ...connection, name }, (flags) =>
  withClient(
    flags,
    (client) => call(client, "flotta_status", { name: flags.name }),
    (v) =>
      `${v["name"]}: ${Views.describeStatus(v as { status: string; parkedUntil?: string | null })}` +
      `${v["current"] ? ` (turn ${v["current"]})` : ""}, ${v["queued"]} queued, ` +
      `${v["turns"]} turns`,
    { storeHealth: true }
  )).pipe(Command.withDescription("An agent's status (and the store's, when degraded)"))

/** Waits in bounded steps until the turn is done (each server-side wait is at most 50 s). */
const waitUntilDone = (client: Client, agent: string, first: Record<string, unknown>) =>
  Effect.iterate(first, {
    while: (answer) => answer["done"] !== true,
    body: (answer) => call(client, "flotta_wait", { name: agent, turnId: answer["turnId"], timeoutSeconds: 45 })
  })

const replyText = (answer: Record<string, unknown>) => {
  const result = answer["result"] as { readonly text?: string } | undefined
  return result?.text ?? ""
}

const ask = Command.make("ask", { ...connection, name, text }, (flags) =>
  withClient(
    flags,
    (client) =>
      call(client, "flotta_ask", { name: flags.name, text: flags.text, timeoutSeconds: 45 }).pipe(
        Effect.flatMap((first) => waitUntilDone(client, flags.name, first))
      ),
    replyText
  )).pipe(Command.withDescription("Ask an agent and print its reply"))

const prompt = Command.make("prompt", { ...connection, name, text }, (flags) =>
  withClient(
    flags,
    (client) => call(client, "flotta_prompt", { name: flags.name, text: flags.text }),
    (v) => String(v["turnId"])
  )).pipe(Command.withDescription("Queue a prompt and print its turn id at once"))

const result = Command.make(
  "result",
  {
    ...connection,
    name,
    turn: Flags.argument(
      "turn",
      "The turn id `prompt` printed (t1, t2, ...), or latest (the default)",
      Schema.String.pipe(Schema.pattern(/^(latest|t[1-9][0-9]*)$/)),
      "is not a turn id (t1, t2, ...) or latest"
    ).pipe(Args.optional)
  },
  (flags) =>
    withClient(
      flags,
      (client) =>
        call(client, "flotta_result", { name: flags.name, turnId: Option.getOrElse(flags.turn, () => "latest") }),
      (v) => replyText(v)
    )
).pipe(Command.withDescription("Print a finished turn's reply (TurnPending while it runs)"))

const unpark = Command.make(
  "unpark",
  {
    ...connection,
    name: Flags.nameArgument("name", "Only this agent (the rest of its credentials' group stays parked); default: all")
      .pipe(Args.optional)
  },
  (flags) =>
    withClient(
      flags,
      (client) =>
        call(client, "flotta_unpark", Option.match(flags.name, { onNone: () => ({}), onSome: (agent) => ({ agent }) })),
      (v) => {
        const unparked = (v["unparked"] ?? []) as ReadonlyArray<string>
        const still = Views.describeParking((v["parking"] ?? []) as Parameters<typeof Views.describeParking>[0])
        return [
          unparked.length === 0 ? "nothing to unpark: no agent was parked" : `unparked ${unparked.join(", ")}`,
          ...still.map((line) => `still ${line}`)
        ].join("\n")
      }
    )
).pipe(
  Command.withDescription(
    "Resume agents parked at a usage limit now, instead of at the reset (staggered); a parked turn resumes with a " +
      "short continuation"
  )
)

const close = Command.make("close", { ...connection, name }, (flags) =>
  withClient(
    flags,
    (client) => call(client, "flotta_close", { name: flags.name }),
    (v) => `closed ${v["name"]}`
  )).pipe(Command.withDescription("Close an agent"))

// ------------------------------------------------------------------------------- the serve, or the store

interface Transcript {
  readonly name: string
  readonly total: number
  readonly turns: ReadonlyArray<TurnRecord>
}

/** Where `reports` and `transcript` read: a running serve, or the store itself. */
interface Source {
  readonly reports: (
    query: { readonly cursor: number; readonly limit: number; readonly agent: Option.Option<string> }
  ) => Effect.Effect<
    { readonly entries: ReadonlyArray<ReportEntry>; readonly next: number },
    ToolFailed | ServerUnreachable
  >
  readonly transcript: (
    name: string,
    last: number | undefined
  ) => Effect.Effect<Transcript, ToolFailed | ServerUnreachable | StoreAccess.NotInStore>
}

const serverSource = (client: Client): Source => ({
  reports: ({ agent, cursor, limit }) =>
    Effect.map(
      call(client, "flotta_reports", {
        cursor,
        limit,
        ...Option.match(agent, { onNone: () => ({}), onSome: (agent) => ({ agent }) })
      }),
      (page) => page as unknown as { readonly entries: ReadonlyArray<ReportEntry>; readonly next: number }
    ),
  transcript: (name, last) =>
    Effect.map(
      call(client, "flotta_transcript", { name, ...(last === undefined ? {} : { last }) }),
      (value) => value as unknown as Transcript
    )
})

const storeSource = (store: StoreShape): Source => ({
  reports: ({ agent, cursor, limit }) =>
    store.readReports({
      since: cursor,
      limit,
      ...Option.match(agent, { onNone: () => ({}), onSome: (agent) => ({ agent }) })
    }),
  transcript: (name, last) => StoreAccess.transcript(store, name, last)
})

const storeFlag = Options.text("store").pipe(
  Options.withPseudoName("path"),
  Options.withDescription(
    "Read this store directly (read-only; beside a running serve too) instead of asking a serve: an SQLite " +
      "file such as .flotta/state.db, or a postgres:// URL. Without it, the store is read when no serve answers"
  ),
  Options.optional
)

/** The store `--store` names: an SQLite file (relative to here) or a Postgres URL; a memory store has no reader. */
const storeTarget = (text: string) => {
  if (text.trim() === "memory") {
    return Effect.fail(Shared.badValue("--store", text, "lives only inside its fleet: ask the serve instead"))
  }
  return Either.match(ConfigFile.readStoreTarget(text, process.cwd()), {
    onLeft: () =>
      Effect.fail(Shared.badValue("--store", text, "is not the path of an SQLite file or a postgres:// URL")),
    onRight: Effect.succeed
  })
}

/**
 * Runs `body` against `--store`, else a running serve, else (when none answers, no `--url` was given, and the
 * config's store is an SQLite file that exists) that file, read-only, saying so on stderr.
 */
const withSource = <A, E, R>(
  flags: Connection & { readonly store: Option.Option<string> },
  body: (source: Source) => Effect.Effect<A, E, R>
) =>
  Effect.scoped(Effect.gen(function*() {
    if (Option.isSome(flags.store)) {
      const target = yield* storeTarget(flags.store.value)
      return yield* body(storeSource(yield* StoreAccess.openReadOnly(target)))
    }
    const config = yield* clientConfig(flags)
    const endpoint = endpointOf(flags, config)
    const client = yield* Effect.either(connectTo(endpoint))
    if (Either.isRight(client)) return yield* body(serverSource(client.right))
    const stored = Composition.storeFor(config, true)
    if (Option.isNone(flags.url) && stored !== "memory" && "sqlite" in stored && StoreAccess.exists(stored)) {
      yield* Output.stderr(`flotta: no serve answered at ${endpoint.url}; reading the store ${stored.sqlite}`)
      return yield* body(storeSource(yield* StoreAccess.openReadOnly(stored)))
    }
    return yield* client.left
  }))

const reports = Command.make(
  "reports",
  {
    ...connection,
    store: storeFlag,
    follow: Options.boolean("follow").pipe(
      Options.withAlias("f"),
      Options.withDescription("Keep printing new entries")
    ),
    agent: Flags.agentName("agent").pipe(Options.withDescription("Only this agent's entries"), Options.optional),
    since: Flags.nonNegativeInteger("since").pipe(
      Options.withDescription("Entries after this sequence number"),
      Options.optional
    )
  },
  (flags) =>
    withSource(flags, (source) =>
      Effect.gen(function*() {
        let cursor = Option.getOrElse(flags.since, () => 0)
        while (true) {
          const page = yield* source.reports({ cursor, limit: 500, agent: flags.agent })
          for (const entry of page.entries) {
            yield* Output.stdout(flags.json ? JSON.stringify(entry) : Views.formatEntry(entry))
          }
          cursor = page.next
          if (page.entries.length === 500) continue
          if (!flags.follow) return
          yield* Effect.sleep("1 second")
        }
      }))
).pipe(
  Command.withDescription("Print the report log (--follow keeps printing), from a running serve or the store itself")
)

const transcript = Command.make(
  "transcript",
  {
    ...connection,
    store: storeFlag,
    name,
    last: Flags.positiveInteger("last").pipe(Options.withDescription("Only the last N turns"), Options.optional)
  },
  (flags) =>
    withSource(flags, (source) =>
      Effect.gen(function*() {
        const value = yield* source.transcript(flags.name, Option.getOrUndefined(flags.last))
        yield* Output.stdout(
          flags.json ? JSON.stringify(value, null, 2) : Views.renderTranscript(value.name, value.turns, value.total)
        )
      }))
).pipe(
  Command.withDescription(
    "Print an agent's turns, oldest first: prompt, tool calls, permission decisions, reply or error, cost and " +
      "time (--json: the records), from a running serve or the store itself"
  )
)

export const commands = [list, status, ask, prompt, result, reports, transcript, close, unpark] as const
