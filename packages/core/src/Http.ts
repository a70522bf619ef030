/**
 * What the fleet's HTTP servers (the MCP endpoint, the dashboard) share: binding a Node server for the life of a
 * scope, and the checks that keep a loopback server from being reached by other sites or machines (loopback
 * addresses, Host names against DNS rebinding, Origins against cross-site requests).
 */
import { Effect, Schema } from "effect"
import type * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as net from "node:net"

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
 * Binds `server` until the scope closes; `describe` turns a bind failure into the caller's typed error. Closing
 * also drops open connections: SSE streams and keep-alive sockets would otherwise hold the close forever.
 */
export const listenScoped = <E>(
  server: http.Server,
  port: number,
  host: string,
  describe: (reason: string) => E
) =>
  Effect.acquireRelease(
    Effect.async<AddressInfo, E>((resume) => {
      const onError = (error: NodeJS.ErrnoException) => {
        const reason = error.code === "EADDRINUSE"
          ? `port ${port} on ${host} is already in use`
          : `cannot listen on ${host}:${port}: ${error.message}`
        resume(Effect.fail(describe(reason)))
      }
      server.once("error", onError)
      server.listen(port, host, () => {
        server.off("error", onError)
        resume(Effect.succeed(server.address() as AddressInfo))
      })
    }),
    () =>
      Effect.async<void>((resume) => {
        server.close(() => resume(Effect.void))
        server.closeAllConnections()
      })
  )

/** `http://host:port` of a bound address (IPv6 in brackets). */
export const originOf = (address: AddressInfo): string =>
  `http://${address.family === "IPv6" ? `[${address.address}]` : address.address}:${address.port}`

const exact = <A, I>(schema: Schema.Schema<A, I>) => Schema.optionalWith(schema, { exact: true })

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
