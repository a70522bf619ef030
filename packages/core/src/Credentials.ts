/**
 * Whose account a child uses: the effective child environment's login and endpoint, hashed (`credentialsOf`).
 * Agents that share credentials share a usage limit, so `Parking` groups them by it; reports and listings show
 * the label, never a secret.
 */
import { createHash } from "node:crypto"

/** The variables that say whose account a child uses and where its requests go. */
export const CREDENTIAL_VARIABLES: ReadonlyArray<string> = [
  "CLAUDE_CODE_OAUTH_TOKEN",
  "ANTHROPIC_AUTH_TOKEN",
  "ANTHROPIC_API_KEY",
  "CLAUDE_CONFIG_DIR",
  "ANTHROPIC_BASE_URL"
]

/** One account, as the fleet groups agents: `key` is a hash, `label` is for people (no secret in either). */
export interface Credentials {
  readonly key: string
  readonly label: string
}

const endpointOf = (url: string | undefined) => {
  if (url === undefined || url.length === 0) return ""
  try {
    return ` at ${new URL(url).host}`
  } catch {
    return " at a custom endpoint"
  }
}

/**
 * The credentials of a child's effective environment (`ClaudeCli.childEnv`): its login variables, its config
 * directory (or, without one, its HOME, where the default config directory and a `claude login` live) and its
 * endpoint, hashed together.
 */
export const credentialsOf = (env: Readonly<Record<string, string>>): Credentials => {
  const names = env["CLAUDE_CONFIG_DIR"] === undefined ? [...CREDENTIAL_VARIABLES, "HOME"] : CREDENTIAL_VARIABLES
  const key = createHash("sha256").update(JSON.stringify(names.map((name) => [name, env[name] ?? null]))).digest(
    "hex"
  )
  // In the order the CLI prefers them; an empty variable is none.
  const set = (name: string) => (env[name] ?? "").length > 0
  const login = set("ANTHROPIC_API_KEY")
    ? "api key"
    : set("ANTHROPIC_AUTH_TOKEN")
    ? "auth token"
    : set("CLAUDE_CODE_OAUTH_TOKEN")
    ? "oauth token"
    : "login"
  return { key, label: `${login} #${key.slice(0, 8)}${endpointOf(env["ANTHROPIC_BASE_URL"])}` }
}
