/**
 * The environment variables the command reads, as data (no decoding here, so `flotta --help` can list them
 * without loading the config's Schemas): the ones that override a config field (`ENVIRONMENT`, applied by
 * ConfigEnvironment), and the rest (`VARIABLES`, what the help and the reference list).
 */

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

/** Every variable the command reads, with its meaning: children inherit them all. */
export const VARIABLES: ReadonlyArray<readonly [string, string]> = [
  ["FLOTTA_CLAUDE_PATH", "the claude executable when the config names none (else the pinned dependency, then PATH)"],
  ...ENVIRONMENT.map((o) => [o.variable, `${o.meaning}; overrides ${o.path.join(".")}`] as const),
  ["ANTHROPIC_API_KEY", "passed on to claude (as are ANTHROPIC_BASE_URL and the rest)"]
]
