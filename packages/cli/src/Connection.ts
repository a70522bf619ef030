/**
 * How a command reaches a running `flotta serve`: its MCP endpoint and token (`--url`, `--token`, else the decoded
 * config's `mcp` section with its environment variables, FLOTTA_MCP_PORT / FLOTTA_MCP_HOST / FLOTTA_MCP_TOKEN,
 * applied, else 127.0.0.1:4099), the connection flags every client command shares (`--url`, `--token`, `--json`,
 * `--config`), one tool call (a typed refusal keeps the fleet's own tag, hence its exit code), and `withClient`,
 * which prints a command's compact view for a person, or with `--json` the server's structured answer. A server
 * that answers 401 or 403 refused the token (`Unauthorized`); one that does not answer is `ServerUnreachable`.
 */
import { type Args, Command, Options } from "@effect/cli"
import { ErrorView, ReportEntry, ReportPage } from "@flotta/core/AgentView"
import * as EngineEvents from "@flotta/core/EngineEvents"
import * as ReportEvent from "@flotta/core/ReportEvent"
import type { StoreHealth } from "@flotta/core/Store"
import * as McpConfig from "@flotta/mcp/McpConfig"
import { Effect, Option, type ParseResult, Redacted, Schema } from "effect"
import * as ConfigFile from "./ConfigFile.js"
import * as Flags from "./Flags.js"
import * as McpClient from "./McpClient.js"
import * as Output from "./Output.js"
import * as Shared from "./SharedOptions.js"
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

/** The server answered, but refused the token this command sent (or that it sent none): HTTP 401 or 403. */
export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", {
  url: Schema.String,
  status: Schema.Number,
  tokenSent: Schema.Boolean,
  reason: Schema.String
}) {
  override get message() {
    const refused = this.tokenSent ? "refused the token" : "needs a token, and none was sent"
    return `the flotta server at ${this.url} ${refused} (HTTP ${this.status}: ${this.reason}): check --token, ` +
      `FLOTTA_MCP_TOKEN or the config's mcp.token`
  }
}

/** What a refusal's body says: the server's JSON-RPC error message (a flotta serve's), else its status text. */
const RefusalBody = Schema.parseJson(Schema.Struct({ error: Schema.Struct({ message: Schema.String }) }))

/**
 * Why a request to `url` failed: Unauthorized when the server answered 401 or 403, else ServerUnreachable (no
 * answer, or one that is no MCP server's).
 */
export const failureOf =
  (url: string, tokenSent: boolean) => (e: McpClient.McpFailure): Unauthorized | ServerUnreachable => {
    switch (e._tag) {
      case "McpHttpError": {
        if (e.status !== 401 && e.status !== 403) {
          return new ServerUnreachable({ url, reason: `HTTP ${e.status}${e.statusText ? ` ${e.statusText}` : ""}` })
        }
        const reason = Option.match(Schema.decodeUnknownOption(RefusalBody)(e.text), {
          onNone: () => e.statusText || (e.status === 401 ? "Unauthorized" : "Forbidden"),
          onSome: (body) => body.error.message
        })
        return new Unauthorized({ url, status: e.status, tokenSent, reason })
      }
      case "McpRequestFailed":
        return new ServerUnreachable({ url, reason: `it answered ${e.message} (${e.code})` })
      case "McpUnreachable":
        return new ServerUnreachable({ url, reason: e.reason })
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
    Flags.optional("The server's MCP endpoint (default: from the config, else http://127.0.0.1:4099/mcp).")
  ),
  token: Options.redacted("token").pipe(
    Options.withPseudoName("token"),
    Flags.optional("Bearer token, kept secret (default: FLOTTA_MCP_TOKEN, else the config's mcp.token).")
  ),
  json: Options.boolean("json").pipe(Options.withDescription("Print the server's structured answer as JSON.")),
  config: Shared.config
}

export type Connection = {
  readonly url: Option.Option<string>
  readonly token: Option.Option<Redacted.Redacted<string>>
  readonly json: boolean
  readonly config: Option.Option<string>
}

/** The config as the client commands read it: the `mcp` section assumed, so its variables always apply. */
export const clientConfig = Effect.fn("Connection.clientConfig")(function*(flags: Pick<Connection, "config">) {
  return yield* ConfigFile.load(process.cwd(), Option.getOrUndefined(flags.config), { assume: ["mcp"] })
})

/** The endpoint and token this command should use: the flags, else the config's `mcp` section and its variables. */
export const endpointOf = (
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
export const connect = Effect.fn("Connection.connect")(function*(flags: Connection) {
  return yield* Effect.flatMap(clientConfig(flags), (config) => connectTo(endpointOf(flags, config)))
})

/**
 * A client of the serve at `url`, once it has answered: its discovery request (`server/discover`) tells a serve
 * that is up and takes the token from one that is not there or refuses it.
 */
export const connectTo = Effect.fn("Connection.connectTo")(
  function*({ token, url }: { readonly url: string; readonly token: Option.Option<string> }) {
    const client = McpClient.make(url, token)
    return yield* Effect.as(
      Effect.mapError(client.request("server/discover"), failureOf(url, Option.isSome(token))),
      client
    )
  }
)

/** A tool's result, as MCP has it. */
const ToolResult = Schema.Struct({
  isError: Schema.optional(Schema.Boolean),
  content: Schema.Array(Schema.Struct({ type: Schema.String, text: Schema.optional(Schema.String) })),
  structuredContent: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
})
const Refusal = Schema.Struct({ error: ErrorView })

// An answer keeps the fields its Schema does not name, in their order: `--json` prints it as the server sent it.
const ANSWER_OPTIONS = { onExcessProperty: "preserve", propertyOrder: "original" } as const

/**
 * What to do about a refusal, said for a person at a shell (the server's own advice names MCP tools); a failure
 * not listed here is shown with its message alone.
 */
const ADVICE: Readonly<Record<string, string>> = {
  AgentNotFound: "`flotta list` shows the live agents; `flotta spawn NAME` starts one",
  AgentAlreadyExists: "pick another name, or `flotta close` the existing agent first",
  AgentClosed: "`flotta spawn NAME --resume SESSION` starts a new one that continues its conversation",
  TurnPending: "`flotta wait NAME` waits for it",
  NoResult: "`flotta transcript NAME` lists its turns",
  RunNotFound: "`flotta runs` lists the runs the serve knows"
}

const sentence = (text: string) => (/[.!?]$/.test(text.trimEnd()) ? text.trimEnd() : `${text.trimEnd()}.`)

/** A typed refusal as the command prints it: `<Tag>: <message>. <advice>.` */
export const describeRefusal = (error: { readonly _tag: string; readonly message: string }): string => {
  const advice = ADVICE[error._tag]
  return `${error._tag}: ${sentence(error.message)}${advice === undefined ? "" : ` ${sentence(advice)}`}`
}

/**
 * Calls one tool and decodes its structured answer with `answer`; a typed failure becomes ToolFailed (its exit code
 * is the failure's own), and so does an answer this command cannot read (a serve of another version).
 */
export const call = Effect.fn("Connection.call")(
  function*<A, I>(
    client: McpClient.McpClient,
    tool: string,
    args: Record<string, unknown>,
    answer: Schema.Schema<A, I>
  ) {
    return yield* client.callTool(tool, args).pipe(
      Effect.mapError(failureOf(client.url, true)),
      Effect.flatMap((raw) => {
        const unexpected = (error: ParseResult.ParseError) => {
          const message = `the server's answer to ${tool} is not what this flotta reads: ${error.message}`
          return new ToolFailed({ tool, error: { _tag: "UnexpectedAnswer", message }, text: message })
        }
        return Schema.decodeUnknown(ToolResult)(raw).pipe(
          Effect.mapError(unexpected),
          Effect.flatMap((result) => {
            if (result.isError === true) {
              const text = result.content.map((block) => block.text ?? "").join("\n")
              return Effect.fail(Option.match(Schema.decodeUnknownOption(Refusal)(result.structuredContent), {
                onNone: () => new ToolFailed({ tool, error: { _tag: "ToolFailed", message: text }, text }),
                onSome: ({ error }) => new ToolFailed({ tool, error, text: describeRefusal(error) })
              }))
            }
            return Schema.decodeUnknown(answer, ANSWER_OPTIONS)(result.structuredContent ?? {}).pipe(
              Effect.mapError(unexpected)
            )
          })
        )
      })
    )
  }
)

const decodeDegraded = ReportEvent.decodeAs(EngineEvents.storeDegraded)

/** Report kinds the report log gives the store's health changes (its entries' agent is `store`). */
const STORE_KINDS = [EngineEvents.storeDegraded.kind, EngineEvents.storeRecovered.kind]

/**
 * The store's health as a running serve sees it: degraded when its latest health entry says so (a read-only
 * reader of the file cannot know: the writes that fail are the serve's). None when it is ok, or unknown.
 */
export const liveStoreHealth = Effect.fn("Connection.liveStoreHealth")(
  function*(client: McpClient.McpClient) {
    let cursor = 0
    let latest: ReportEntry | undefined
    while (true) {
      const page = yield* call(
        client,
        "flotta_reports",
        { agent: "store", kinds: STORE_KINDS, cursor, limit: 10_000 },
        ReportPage
      )
      latest = page.entries[page.entries.length - 1] ?? latest
      cursor = page.next
      if (page.entries.length < 10_000) break
    }
    return latest === undefined
      ? Option.none<StoreHealth>()
      : Option.map(decodeDegraded(latest), (entry): StoreHealth => entry.data)
  },
  Effect.orElseSucceed(() => Option.none<StoreHealth>())
)

/**
 * The store's health through the serve a config points at, if one answers (only a config with an `mcp`
 * section serves over HTTP): for `doctor`. None when no serve answers.
 */
export const serveStoreHealth = Effect.fn("Connection.serveStoreHealth")(function*(config: ConfigFile.LoadedConfig) {
  return yield* config.mcp === undefined
    ? Effect.succeed(Option.none<{ readonly url: string; readonly health: Option.Option<StoreHealth> }>())
    : Effect.scoped(Effect.gen(function*() {
      const endpoint = endpointOf({ url: Option.none(), token: Option.none() }, config)
      const client = yield* connectTo(endpoint)
      return Option.some({ url: endpoint.url, health: yield* liveStoreHealth(client) })
    })).pipe(Effect.orElseSucceed(() => Option.none()))
})

/**
 * Runs a command body with a client, printing JSON instead when `--json` is set; with `storeHealth`, a degraded
 * store gets a line of its own after the answer.
 */
export const withClient = Effect.fn("Connection.withClient")(
  function*<A>(
    flags: Connection,
    body: (client: McpClient.McpClient) => Effect.Effect<A, ToolFailed | ServerUnreachable | Unauthorized>,
    render: (value: A) => string,
    options: { readonly storeHealth?: boolean } = {}
  ) {
    return yield* Effect.scoped(
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
  }
)

/** One tool call as a whole command: its answer decoded with `answer`, then printed as `withClient` prints. */
export const callAndPrint = Effect.fn("Connection.callAndPrint")(
  function*<A, I>(
    flags: Connection,
    tool: string,
    args: Record<string, unknown>,
    answer: Schema.Schema<A, I>,
    render: (value: A) => string,
    options: { readonly storeHealth?: boolean } = {}
  ) {
    return yield* withClient(flags, (client) => call(client, tool, args, answer), render, options)
  }
)

/** A command that calls one tool on the agent its `name` argument names, and prints the answer. */
export const agentToolCommand = <A, I>(spec: {
  readonly command: string
  readonly name: Args.Args<string>
  readonly tool: string
  readonly answer: Schema.Schema<A, I>
  readonly render: (value: A) => string
  readonly description: string
}) =>
  Command.make(
    spec.command,
    { ...connection, name: spec.name },
    (flags) => callAndPrint(flags, spec.tool, { name: flags.name }, spec.answer, spec.render)
  ).pipe(Command.withDescription(spec.description))
