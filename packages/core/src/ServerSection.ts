/**
 * The part of a server section (`mcp`, `dashboard`) that says where it listens and who may call, as plain data
 * from a config file or code, and the token as the settings keep it. The sections' Schema fields are
 * `ServerFields` in `Http`; each section adds its own fields and checks on top.
 */
import { Option, Redacted } from "effect"

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
