/**
 * Commands that drive a running `flotta serve` over its MCP endpoint: list, status, ask, prompt, result,
 * reports, close. The endpoint is `--url`, else the decoded config's `mcp` section (with its environment
 * variables, FLOTTA_MCP_PORT / FLOTTA_MCP_HOST, applied), else 127.0.0.1:4099; the token is `--token`, else
 * the config's (FLOTTA_MCP_TOKEN overrides it).
 */
import { Args, Command, Options } from "@effect/cli"
import * as McpConfig from "@flotta/mcp/McpConfig"
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client"
import { Effect, Option, Redacted, Schema } from "effect"
import * as ConfigFile from "./ConfigFile.js"
import * as Flags from "./Flags.js"
import * as Output from "./Output.js"
import * as Shared from "./SharedOptions.js"

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

const connection = {
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

type Connection = {
  readonly url: Option.Option<string>
  readonly token: Option.Option<Redacted.Redacted<string>>
  readonly json: boolean
  readonly config: Option.Option<string>
}

/** The endpoint and token this command should use: the flags, else the config's `mcp` section and its variables. */
const endpoint = (flags: Connection) =>
  Effect.gen(function*() {
    const config = yield* ConfigFile.load(process.cwd(), Option.getOrUndefined(flags.config), { assume: ["mcp"] })
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
  })

/** A connected client for the duration of the scope. */
const connect = (flags: Connection) =>
  Effect.gen(function*() {
    const { token, url } = yield* endpoint(flags)
    return yield* Effect.acquireRelease(
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
  })

interface ToolResult {
  readonly isError?: boolean
  readonly content: ReadonlyArray<{ readonly type: string; readonly text?: string }>
  readonly structuredContent?: Record<string, unknown>
}

/** Calls one tool; a typed failure becomes ToolFailed (its exit code is the failure's own). */
const call = (client: Client, tool: string, args: Record<string, unknown>) =>
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

/** Runs a command body with a client, printing JSON instead when `--json` is set. */
const withClient = <A extends Record<string, unknown>>(
  flags: Connection,
  body: (client: Client) => Effect.Effect<A, ToolFailed | ServerUnreachable>,
  render: (value: A) => string
) =>
  Effect.scoped(
    Effect.gen(function*() {
      const client = yield* connect(flags)
      const value = yield* body(client)
      yield* Output.stdout(flags.json ? JSON.stringify(value, null, 2) : render(value))
    })
  )

interface AgentRow {
  readonly name: string
  readonly status: string
  readonly model: string | null
  readonly queued: number
  readonly totals: { readonly turns: number; readonly costUsd: number }
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
      return agents.map((a) =>
        `${a.name.padEnd(24)} ${a.status.padEnd(10)} ${String(a.model ?? "-").padEnd(12)} ` +
        `queued ${a.queued}  turns ${a.totals.turns}  $${a.totals.costUsd.toFixed(4)}`
      ).join("\n")
    })
).pipe(Command.withDescription("List the live agents of a running `flotta serve`"))

const status = Command.make("status", { ...connection, name }, (flags) =>
  withClient(
    flags,
    (client) => call(client, "flotta_status", { name: flags.name }),
    (v) =>
      `${v["name"]}: ${v["status"]}${v["current"] ? ` (turn ${v["current"]})` : ""}, ${v["queued"]} queued, ` +
      `${v["turns"]} turns`
  )).pipe(Command.withDescription("An agent's status"))

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

const close = Command.make("close", { ...connection, name }, (flags) =>
  withClient(
    flags,
    (client) => call(client, "flotta_close", { name: flags.name }),
    (v) => `closed ${v["name"]}`
  )).pipe(Command.withDescription("Close an agent"))

interface Entry {
  readonly seq: number
  readonly at: string
  readonly agent: string
  readonly kind: string
  readonly turnId?: string
  readonly data: unknown
}

const formatEntry = (e: Entry) =>
  `${String(e.seq).padStart(6)} ${e.at} ${e.agent} ${e.kind}${e.turnId === undefined ? "" : ` ${e.turnId}`} ` +
  JSON.stringify(e.data)

const reports = Command.make(
  "reports",
  {
    ...connection,
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
    Effect.scoped(Effect.gen(function*() {
      const client = yield* connect(flags)
      let cursor = Option.getOrElse(flags.since, () => 0)
      while (true) {
        const page = yield* call(client, "flotta_reports", {
          cursor,
          limit: 500,
          ...Option.match(flags.agent, { onNone: () => ({}), onSome: (agent) => ({ agent }) })
        })
        const entries = page["entries"] as ReadonlyArray<Entry>
        for (const entry of entries) yield* Output.stdout(flags.json ? JSON.stringify(entry) : formatEntry(entry))
        cursor = page["next"] as number
        if (entries.length === 500) continue
        if (!flags.follow) return
        yield* Effect.sleep("1 second")
      }
    }))
).pipe(Command.withDescription("Print the report log (--follow keeps printing)"))

export const commands = [list, status, ask, prompt, result, reports, close] as const
