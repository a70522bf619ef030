/**
 * The MCP server's settings: where it listens, who may call it, and how long legacy sessions live. Read from
 * the config file's `mcp` section (`Config.nested("mcp")`), with `FLOTTA_MCP_PORT`, `FLOTTA_MCP_HOST` and
 * `FLOTTA_MCP_TOKEN` overriding it. Secure by default: loopback only, Host and Origin checked on every request,
 * and a non-loopback bind without a token refused at start.
 */
import { Config, Data, Duration, Effect, Option, Redacted } from "effect"
import * as net from "node:net"

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
export interface McpConfigInput {
  readonly port?: number
  readonly host?: string
  readonly token?: string | Redacted.Redacted<string>
  readonly allowedOrigins?: ReadonlyArray<string>
  readonly allowedHosts?: ReadonlyArray<string>
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

const LOOPBACK_NAMES = new Set(["localhost", "127.0.0.1", "::1", "[::1]"])

export const isLoopback = (host: string): boolean => {
  if (LOOPBACK_NAMES.has(host.toLowerCase())) return true
  const bare = host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host
  if (net.isIPv4(bare)) return bare.startsWith("127.")
  if (net.isIPv6(bare)) return bare === "::1" || bare.toLowerCase().startsWith("::ffff:127.")
  return false
}

/** An origin as the guard compares it: its hostname (`https://a.example:8443` → `a.example`). */
const originHostname = (entry: string): string => {
  const trimmed = entry.trim()
  if (/^[a-z][a-z0-9+.-]*:\/\/\*$/i.test(trimmed) || !trimmed.includes("://")) return trimmed.toLowerCase()
  try {
    return new URL(trimmed).hostname.toLowerCase()
  } catch {
    return trimmed.toLowerCase()
  }
}

/** Applies defaults and checks the settings; never reads the environment. */
export const make = (input: McpConfigInput = {}): Effect.Effect<McpSettings, McpConfigError> =>
  Effect.gen(function*() {
    const port = input.port ?? DEFAULT_PORT
    if (!Number.isInteger(port) || port < 0 || port > 65535) {
      return yield* new McpConfigError({ reason: `mcp.port must be an integer from 0 to 65535, got ${port}` })
    }
    const host = (input.host ?? DEFAULT_HOST).trim()
    if (host.length === 0) return yield* new McpConfigError({ reason: "mcp.host must not be empty" })
    const raw = input.token
    const token = raw === undefined
      ? Option.none()
      : Option.some(typeof raw === "string" ? Redacted.make(raw) : raw)
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

/** `FLOTTA_MCP_PORT`, `FLOTTA_MCP_HOST`, `FLOTTA_MCP_TOKEN`: they win over the config file and over code. */
export const environmentOverrides: Config.Config<McpConfigInput> = Config.all({
  port: Config.option(Config.port("FLOTTA_MCP_PORT")),
  host: Config.option(Config.string("FLOTTA_MCP_HOST")),
  token: Config.option(Config.redacted("FLOTTA_MCP_TOKEN"))
}).pipe(Config.map(({ host, port, token }) => ({
  ...(Option.isSome(port) ? { port: port.value } : {}),
  ...(Option.isSome(host) ? { host: host.value } : {}),
  ...(Option.isSome(token) ? { token: token.value } : {})
})))

/**
 * The `mcp` section: `None` when it is absent. A section is present when any of its keys is set; an otherwise
 * empty section is written `"mcp": { "enabled": true }`, and `"enabled": false` switches a section off.
 */
export const section: Config.Config<Option.Option<McpConfigInput>> = Config.all({
  enabled: Config.option(Config.boolean("enabled")),
  port: Config.option(Config.port("port")),
  host: Config.option(Config.string("host")),
  token: Config.option(Config.redacted("token")),
  allowedOrigins: Config.option(Config.array(Config.string(), "allowedOrigins")),
  allowedHosts: Config.option(Config.array(Config.string(), "allowedHosts")),
  maxSessions: Config.option(Config.integer("maxSessions")),
  sessionIdleTimeoutMs: Config.option(Config.integer("sessionIdleTimeoutMs"))
}).pipe(
  Config.nested("mcp"),
  Config.map((fields): Option.Option<McpConfigInput> => {
    const { enabled, ...rest } = fields
    const anySet = Object.values(rest).some((o: Option.Option<unknown>) => Option.isSome(o))
    if (Option.getOrElse(enabled, () => anySet) === false) return Option.none()
    const get = <A>(o: Option.Option<A>) => Option.getOrUndefined(o)
    const input: { -readonly [K in keyof McpConfigInput]: McpConfigInput[K] } = {}
    if (Option.isSome(rest.port)) input.port = rest.port.value
    if (Option.isSome(rest.host)) input.host = rest.host.value
    if (Option.isSome(rest.token)) input.token = rest.token.value
    if (Option.isSome(rest.allowedOrigins)) input.allowedOrigins = rest.allowedOrigins.value
    if (Option.isSome(rest.allowedHosts)) input.allowedHosts = rest.allowedHosts.value
    if (Option.isSome(rest.maxSessions)) input.maxSessions = rest.maxSessions.value
    const idle = get(rest.sessionIdleTimeoutMs)
    if (idle !== undefined) input.sessionIdleTimeout = Duration.millis(idle)
    return Option.some(input)
  })
)

/** Settings from code, with the environment's overrides applied on top, checked. */
export const resolve = (input: McpConfigInput = {}) =>
  Effect.flatMap(environmentOverrides, (overrides) => make({ ...input, ...overrides }))
