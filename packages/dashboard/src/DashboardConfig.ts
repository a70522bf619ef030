/**
 * The dashboard's settings: the config file's `dashboard` section, or the same fields from code. Secure by
 * default, by the MCP server's rules: loopback only, Host and Origin checked, the token required when one is
 * configured, and a non-loopback bind without a token refused at start.
 *
 * Without a `port` the dashboard shares the MCP server (`/` beside `/mcp`): it then inherits that server's host,
 * token and allowed names (its own `token` and allowed names still apply on top).
 */
import {
  isLoopback,
  originHostname,
  redactedToken,
  ServerFields,
  type ServerSectionInput
} from "@flotta/core/ServerSection"
import { Data, Effect, Option, Redacted, Schema } from "effect"

export interface DashboardSettings {
  /** 0 picks a free port (tests). */
  readonly port: number
  readonly host: string
  /** When set, every request needs it: a Bearer header, the session cookie, or `?token=` once. */
  readonly token: Option.Option<Redacted.Redacted<string>>
  /** Origin hostnames allowed besides the loopback ones and the page's own. */
  readonly allowedOrigins: ReadonlyArray<string>
  /** Host header names allowed besides the loopback ones and the bound host. */
  readonly allowedHosts: ReadonlyArray<string>
}

/** The section's fields as plain data; `port` absent means "share the MCP server". */
export type DashboardConfigInput = ServerSectionInput

/** Where a shared dashboard lives: the MCP server's own settings, which it inherits. */
export interface SharedServer {
  readonly host: string
  readonly token: Option.Option<Redacted.Redacted<string>>
  readonly allowedOrigins: ReadonlyArray<string>
  readonly allowedHosts: ReadonlyArray<string>
}

/** The port and host a dashboard uses when it has its own server and names neither (the MCP defaults). */
export const DEFAULT_PORT = 4099
export const DEFAULT_HOST = "127.0.0.1"

/** The dashboard cannot start with these settings; the message says why and what to change. */
export class DashboardConfigError extends Data.TaggedError("DashboardConfigError")<{ readonly reason: string }> {
  override get message() {
    return `dashboard not started: ${this.reason}`
  }
}

const fail = (reason: string) => new DashboardConfigError({ reason })

/** Applies defaults and checks the settings; `shared` is the MCP server it sits on, when it has no port. */
export const make = Effect.fn("DashboardConfig.make")(
  function*(input: DashboardConfigInput = {}, shared?: SharedServer) {
    if (shared !== undefined && input.port === undefined && input.host !== undefined) {
      return yield* fail(
        "dashboard.host needs dashboard.port: without a port the dashboard shares the MCP server and its host"
      )
    }
    const port = input.port ?? DEFAULT_PORT
    if (!Number.isInteger(port) || port < 0 || port > 65535) {
      return yield* fail(`dashboard.port must be an integer from 0 to 65535, got ${port}`)
    }
    const host = (input.host ?? shared?.host ?? DEFAULT_HOST).trim()
    if (host.length === 0) return yield* fail("dashboard.host must not be empty")
    const token = Option.orElse(redactedToken(input.token), () => shared?.token ?? Option.none())
    if (Option.isSome(token) && Redacted.value(token.value).trim().length < 16) {
      return yield* fail("the dashboard token must be at least 16 characters long")
    }
    if (!isLoopback(host) && Option.isNone(token)) {
      return yield* fail(
        `binding to ${host} exposes the fleet beyond this machine, and no token is configured. ` +
          "Set dashboard.token (or mcp.token, FLOTTA_MCP_TOKEN) to require one, or bind to 127.0.0.1"
      )
    }
    return {
      port,
      host,
      token,
      allowedOrigins: [...(shared?.allowedOrigins ?? []), ...(input.allowedOrigins ?? []).map(originHostname)],
      allowedHosts: [...(shared?.allowedHosts ?? []), ...(input.allowedHosts ?? [])]
    } satisfies DashboardSettings
  }
)

/** The `dashboard` section of a config file, as written (`enabled: false` turns it off). */
export const FileSection = Schema.Struct({
  ...ServerFields,
  port: ServerFields.port.annotations({
    description: "A port of its own. Absent: the dashboard shares the MCP server (`/` beside `/mcp`), with its " +
      `host and token; without an \`mcp\` section it listens on ${DEFAULT_HOST}:${DEFAULT_PORT} itself.`
  }),
  host: ServerFields.host.annotations({
    description: `The address to listen on, with \`port\` (default ${DEFAULT_HOST}). Anything but loopback ` +
      "needs a `token`."
  }),
  token: ServerFields.token.annotations({
    description: "Required of every request (a Bearer header, or `?token=` once, after which the browser holds " +
      "an `HttpOnly; SameSite=Strict` cookie). Default, when it shares the MCP server: that server's token."
  })
})
export type FileSection = typeof FileSection.Type

/** A decoded section as settings input; `undefined` when it is absent or switched off. */
export const fromFile = (section: FileSection | undefined): DashboardConfigInput | undefined => {
  if (section === undefined || section.enabled === false) return undefined
  const { enabled: _enabled, ...input } = section
  return input
}
