/**
 * The environment's one mapping onto the config file (`ENVIRONMENT`): each variable wins over the field it
 * names, and a bad value is an error naming the variable.
 */
import { shown } from "@flotta/core/Decode"
import { Config, Effect, Either, Option, Predicate } from "effect"
import { ConfigFileError } from "./ConfigSchema.js"
import { readStoreTarget } from "./StoreTarget.js"

/** One environment variable and the config field it overrides. */
export interface Override {
  readonly variable: string
  /** The field: top level, or `[section, key]` (applied only when the file has that section). */
  readonly path: readonly [string] | readonly [string, string]
  /** `store`: `memory`, an SQLite file (ending .db, .sqlite or .sqlite3) or a postgres:// URL (`readStoreTarget`). */
  readonly type: "integer" | "string" | "store"
  readonly meaning: string
}

/** The environment's mapping onto the config file: each variable wins over the field it names. */
export const ENVIRONMENT: ReadonlyArray<Override> = [
  {
    variable: "FLOTTA_MAX_CONCURRENT_STARTS",
    path: ["maxConcurrentStarts"],
    type: "integer",
    meaning: "children starting at once (default: twice the cores)"
  },
  {
    variable: "FLOTTA_MAX_LIVE",
    path: ["maxLive"],
    type: "integer",
    meaning: "live claude processes at most; past it the session idle the longest hibernates"
  },
  {
    variable: "FLOTTA_MCP_PORT",
    path: ["mcp", "port"],
    type: "integer",
    meaning: "the MCP server's port (default 4099)"
  },
  {
    variable: "FLOTTA_MCP_HOST",
    path: ["mcp", "host"],
    type: "string",
    meaning: "the MCP server's address (default 127.0.0.1)"
  },
  {
    variable: "FLOTTA_MCP_TOKEN",
    path: ["mcp", "token"],
    type: "string",
    meaning: "bearer token the MCP server requires, and client commands send"
  },
  {
    variable: "FLOTTA_GITHUB_SECRET",
    path: ["github", "secret"],
    type: "string",
    meaning: "the secret GitHub signs its webhook deliveries with (POST /hooks/github)"
  },
  {
    variable: "FLOTTA_STORE",
    path: ["store"],
    type: "store",
    meaning: "where serve and repl keep state: memory, an SQLite file (.db) or a postgres:// URL"
  }
]

/** One variable's text as the value of its field (`previous`: the field's value in the file). */
const parse = (override: Override, text: string, previous: unknown): Either.Either<unknown, string> => {
  switch (override.type) {
    case "string":
      return Either.right(text)
    case "integer":
      return /^\s*-?\d+\s*$/.test(text)
        ? Either.right(Number(text))
        : Either.left(`expected an integer, got ${shown(text)}`)
    case "store":
      // The file's retention stays: the variable says where state lives, not how long it is kept.
      return Either.map(readStoreTarget(text, process.cwd(), { requireSuffix: true }), (target) => {
        const retainDays = Predicate.isRecord(previous) ? previous["retainDays"] : undefined
        return target === "memory" || retainDays === undefined ? target : { ...target, retainDays }
      })
  }
}

/**
 * The file with the environment's overrides applied. A section-level override applies only to a section the
 * file has (or one listed in `assume`): a variable never switches a server on by itself.
 */
export const applyEnvironment = Effect.fn("ConfigEnvironment.applyEnvironment")(function*(
  file: string,
  raw: Readonly<Record<string, unknown>>,
  assume: ReadonlyArray<string> = []
) {
  const out: Record<string, unknown> = { ...raw }
  for (const name of assume) {
    if (out[name] === undefined) out[name] = {}
  }
  for (const override of ENVIRONMENT) {
    const value = yield* Config.option(Config.nonEmptyString(override.variable)).pipe(
      Effect.orElseSucceed(() => Option.none<string>())
    )
    if (Option.isNone(value)) continue
    const [first, second] = override.path
    const parsed = parse(override, value.value, out[first])
    if (Either.isLeft(parsed)) {
      return yield* new ConfigFileError({
        file: `the environment (${file})`,
        path: override.variable,
        reason: parsed.left
      })
    }
    const section = out[first]
    if (second === undefined) out[first] = parsed.right
    else if (Predicate.isRecord(section)) out[first] = { ...section, [second]: parsed.right }
  }
  return out
})
