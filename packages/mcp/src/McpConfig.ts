/**
 * The MCP server's settings: where it listens, who may call it, and how long legacy sessions live: the config
 * file's `mcp` section (`FileSection`), or the same fields from code. Secure by default: loopback only, Host
 * and Origin checked on every request, and a non-loopback bind without a token refused at start.
 */
import {
  isLoopback,
  originHostname,
  redactedToken,
  ServerFields,
  type ServerSectionInput
} from "@flotta/core/ServerSection"
import { Data, Duration, Effect, Option, Redacted, Schema } from "effect"

export interface McpSettings {
  /** 0 picks a free port (tests). Default 4099. */
  readonly port: number
  /** Default 127.0.0.1. */
  readonly host: string
  /** When set, every HTTP request needs `Authorization: Bearer <token>`. */
  readonly token: Option.Option<Redacted.Redacted<string>>
  /**
   * Origins allowed besides the loopback ones (`localhost`, `127.0.0.1`, `[::1]`), as hostnames (any port);
   * `https://app.example.com` is accepted and read as its hostname, and `<scheme>://*` allows a whole scheme
   * (browser extensions).
   */
  readonly allowedOrigins: ReadonlyArray<string>
  /** Host header names allowed besides the loopback ones and the bound host. */
  readonly allowedHosts: ReadonlyArray<string>
  /** Live legacy (2025-era) sessions at most; the least recently used one is closed to admit a new one. */
  readonly maxSessions: number
  /** A legacy session idle this long is closed (clients often never send DELETE). */
  readonly sessionIdleTimeout: Duration.Duration
}

/** The config section's fields, as plain data (a config file, or code). */
export interface McpConfigInput extends ServerSectionInput {
  readonly maxSessions?: number
  readonly sessionIdleTimeout?: Duration.DurationInput
}

export const DEFAULT_PORT = 4099
export const DEFAULT_HOST = "127.0.0.1"
export const PATH = "/mcp"

/** The MCP server cannot start with these settings; the message says why and what to change. */
export class McpConfigError extends Data.TaggedError("McpConfigError")<{ readonly reason: string }> {
  override get message() {
    return `MCP server not started: ${this.reason}`
  }
}

export { isLoopback }

/** Applies defaults and checks the settings; never reads the environment. */
export const make = Effect.fn("McpConfig.make")(function*(input: McpConfigInput = {}) {
  const port = input.port ?? DEFAULT_PORT
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    return yield* new McpConfigError({ reason: `mcp.port must be an integer from 0 to 65535, got ${port}` })
  }
  const host = (input.host ?? DEFAULT_HOST).trim()
  if (host.length === 0) return yield* new McpConfigError({ reason: "mcp.host must not be empty" })
  const token = redactedToken(input.token)
  if (Option.isSome(token) && Redacted.value(token.value).trim().length < 16) {
    return yield* new McpConfigError({ reason: "the MCP token must be at least 16 characters long" })
  }
  if (!isLoopback(host) && Option.isNone(token)) {
    return yield* new McpConfigError({
      reason: `binding to ${host} exposes the fleet beyond this machine, and no token is configured. ` +
        "Set mcp.token in the config (or FLOTTA_MCP_TOKEN) to require a bearer token, or bind to 127.0.0.1"
    })
  }
  const maxSessions = input.maxSessions ?? 256
  if (!Number.isInteger(maxSessions) || maxSessions < 1) {
    return yield* new McpConfigError({ reason: `mcp.maxSessions must be a positive integer, got ${maxSessions}` })
  }
  return {
    port,
    host,
    token,
    allowedOrigins: (input.allowedOrigins ?? []).map(originHostname),
    allowedHosts: input.allowedHosts ?? [],
    maxSessions,
    sessionIdleTimeout: Duration.decode(input.sessionIdleTimeout ?? Duration.minutes(30))
  } satisfies McpSettings
})

const exact = <A, I>(schema: Schema.Schema<A, I>) => Schema.optionalWith(schema, { exact: true })

/** The `mcp` section of a config file, as written (`sessionIdleTimeoutMs`; `enabled: false` turns it off). */
export const FileSection = Schema.Struct({
  ...ServerFields,
  port: ServerFields.port.annotations({
    description: `The port of \`http://<host>:<port>${PATH}\` (default ${DEFAULT_PORT}; 0 picks a free one).`
  }),
  token: ServerFields.token.annotations({
    description: "A bearer token every request must carry (`Authorization: Bearer <token>`); without one, a " +
      "request gets 401. The client commands send it too."
  }),
  maxSessions: exact(Schema.Number.pipe(Schema.int(), Schema.positive())).annotations({
    description: "Live sessions of the 2025-era protocol at most (default 256); the least recently used one is " +
      "closed to admit a new one."
  }),
  sessionIdleTimeoutMs: exact(Schema.Number.pipe(Schema.int(), Schema.positive())).annotations({
    description: "A 2025-era session idle this long is closed, in milliseconds (default 30 minutes): clients " +
      "often never send DELETE."
  })
})
export type FileSection = typeof FileSection.Type

/** A decoded section as settings input; `undefined` when it is absent or switched off (`enabled: false`). */
export const fromFile = (section: FileSection | undefined): McpConfigInput | undefined => {
  if (section === undefined || section.enabled === false) return undefined
  const { enabled: _enabled, sessionIdleTimeoutMs, ...input } = section
  return { ...input, ...(sessionIdleTimeoutMs === undefined ? {} : { sessionIdleTimeout: sessionIdleTimeoutMs }) }
}
