/**
 * The part of a server section (`mcp`, `dashboard`) that says where it listens and who may call, as plain data
 * from a config file or code, the token as the settings keep it, and the names a guard compares (loopback
 * addresses, an origin's hostname). The sections' Schema fields are
 * `ServerFields`; each section adds its own fields and checks on top. Plain rules only (no server is loaded here),
 * so that reading a config costs no HTTP stack.
 */
import { Option, Redacted, Schema } from "effect"
import * as net from "node:net"
import { exact } from "./Decode.js"

/** Where a server listens and who may call it, before defaults and checks. */
export interface ServerSectionInput {
  readonly port?: number
  readonly host?: string
  readonly token?: string | Redacted.Redacted<string>
  readonly allowedOrigins?: ReadonlyArray<string>
  readonly allowedHosts?: ReadonlyArray<string>
}

/** The configured token, redacted (a plain string is wrapped); none when the section has none. */
export const redactedToken = (
  token: ServerSectionInput["token"]
): Option.Option<Redacted.Redacted<string>> =>
  token === undefined ? Option.none() : Option.some(typeof token === "string" ? Redacted.make(token) : token)

const LOOPBACK_NAMES = new Set(["localhost", "127.0.0.1", "::1", "[::1]"])

export const isLoopback = (host: string): boolean => {
  if (LOOPBACK_NAMES.has(host.toLowerCase())) return true
  const bare = host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host
  if (net.isIPv4(bare)) return bare.startsWith("127.")
  if (net.isIPv6(bare)) return bare === "::1" || bare.toLowerCase().startsWith("::ffff:127.")
  return false
}

/** An origin as the guards compare it: its hostname (`https://a.example:8443` → `a.example`). */
export const originHostname = (entry: string): string => {
  const trimmed = entry.trim()
  if (/^[a-z][a-z0-9+.-]*:\/\/\*$/i.test(trimmed) || !trimmed.includes("://")) return trimmed.toLowerCase()
  try {
    return new URL(trimmed).hostname.toLowerCase()
  } catch {
    return trimmed.toLowerCase()
  }
}

/**
 * The fields every server section of the config file has (`mcp`, `dashboard`): where it listens, who may call.
 * Their descriptions are the config reference's prose; a section may describe a field its own way.
 */
export const ServerFields = {
  enabled: exact(Schema.Boolean).annotations({ description: "`false` turns the section off, as if it were absent." }),
  port: exact(Schema.Number.pipe(Schema.int(), Schema.between(0, 65535))).annotations({
    description: "The port to listen on (0 picks a free one)."
  }),
  host: exact(Schema.String.pipe(Schema.minLength(1))).annotations({
    description: "The address to listen on (default 127.0.0.1). Anything but loopback needs a `token`."
  }),
  token: exact(Schema.String.pipe(Schema.minLength(16, { message: () => "at least 16 characters" }))).annotations({
    description: "A bearer token every request must carry (`Authorization: Bearer <token>`)."
  }),
  allowedOrigins: exact(Schema.Array(Schema.String)).annotations({
    description: "Origins allowed besides the loopback ones, as hostnames (any port): `https://app.example.com` " +
      "is read as its hostname, and `<scheme>://*` allows a whole scheme (browser extensions). A request from " +
      "any other Origin gets 403."
  }),
  allowedHosts: exact(Schema.Array(Schema.String)).annotations({
    description: "Host header names allowed besides the loopback ones and the bound host (against DNS rebinding)."
  })
}
