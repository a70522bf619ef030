/**
 * `flotta doctor`: is this machine ready? The claude binary in use and its version against the tested one,
 * whether credentials are present, whether the config is valid, and the store `serve` would use: its kind,
 * place, size, schema version and health (read-only, so beside a running serve too; and as that serve sees it,
 * when one answers). Exits non-zero when something blocks work.
 */
import { Command } from "@effect/cli"
import { Command as Process, FileSystem } from "@effect/platform"
import * as ClaudeCli from "@flotta/core/ClaudeCli"
import { SpawnFailed } from "@flotta/core/Errors"
import type { StoreError } from "@flotta/core/Errors"
import { Config, Effect, Either, Option } from "effect"
import * as os from "node:os"
import * as path from "node:path"
import * as ClientCommands from "./ClientCommands.js"
import * as Composition from "./Composition.js"
import * as ConfigFile from "./ConfigFile.js"
import * as Output from "./Output.js"
import * as Shared from "./SharedOptions.js"
import * as StoreAccess from "./StoreAccess.js"
import * as Views from "./Views.js"

const env = (name: string) =>
  Config.option(Config.nonEmptyString(name)).pipe(Effect.orElseSucceed(() => Option.none<string>()))

const claudeVersion = (executable: ClaudeCli.ClaudeExecutable) =>
  Process.make(executable.command, ...executable.prefixArgs, "--version").pipe(
    Process.string,
    Effect.timeout("20 seconds"),
    Effect.map((out) => out.trim()),
    Effect.either
  )

/** Where credentials come from, if anywhere. */
const credentials = Effect.gen(function*() {
  for (const name of ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"]) {
    if (Option.isSome(yield* env(name))) return Option.some(`${name} is set`)
  }
  const fs = yield* FileSystem.FileSystem
  const configDir = Option.getOrElse(yield* env("CLAUDE_CONFIG_DIR"), () => path.join(os.homedir(), ".claude"))
  const file = path.join(configDir, ".credentials.json")
  if (yield* fs.exists(file).pipe(Effect.orElseSucceed(() => false))) return Option.some(`a login in ${file}`)
  return Option.none<string>()
})

/** The store's line: what it is, or that the first serve will make it. */
export const storeLine = (
  inspected: StoreAccess.Inspection,
  say: { readonly ok: (text: string) => Effect.Effect<void>; readonly warn: (text: string) => Effect.Effect<void> }
) => {
  switch (inspected._tag) {
    case "Memory":
      return say.ok("store: memory (serve and repl keep no state across restarts)")
    case "NotCreated":
      return say.ok(`store: sqlite ${inspected.location}: not created yet (the first \`flotta serve\` makes it)`)
    case "Found":
      return (inspected.info.health.state === "ok" ? say.ok : say.warn)(
        `store: ${Views.describeStoreWithHealth(inspected.info)}`
      )
  }
}

export const command = Command.make("doctor", { config: Shared.config }, (flags) =>
  Effect.gen(function*() {
    const ok = (text: string) => Output.stdout(`  ok    ${text}`)
    const warn = (text: string) => Output.stdout(`  warn  ${text}`)
    const bad = (text: string) => Output.stdout(`  FAIL  ${text}`)
    let failure: ConfigFile.ConfigFileError | SpawnFailed | StoreError | undefined
    yield* Output.stdout(`flotta doctor (node ${process.version}, ${os.platform()} ${os.arch()})`)

    const loaded = yield* Effect.either(ConfigFile.load(process.cwd(), Option.getOrUndefined(flags.config)))
    if (Either.isLeft(loaded)) {
      yield* bad(`config: ${loaded.left.message}`)
      failure = loaded.left
    } else if (loaded.right.file === null) {
      yield* ok("config: none here (flotta.config.json, .flotta/config.json or flotta.config.ts); run `flotta init`")
    } else {
      const fleet = loaded.right.fleet.fleet
      yield* ok(
        `config: ${loaded.right.file}: ${fleet.sessions.length} session(s), ${fleet.templates.length} run template(s)`
      )
      for (const rejected of fleet.rejected) yield* warn(`config: ${rejected.path}: ${rejected.message} (skipped)`)
    }

    const configured = Either.isRight(loaded) ? loaded.right.fleet.claudePath : undefined
    const executable = yield* ClaudeCli.resolve(configured)
    const version = yield* claudeVersion(executable)
    if (Either.isLeft(version)) {
      yield* bad(`claude: cannot run ${executable.command} (from ${executable.source}): ${String(version.left)}`)
      failure ??= new SpawnFailed({
        name: "claude",
        reason: `cannot run ${executable.command} --version`,
        exitCode: null,
        stderr: ""
      })
    } else {
      const tested = version.right.startsWith(ClaudeCli.TESTED_VERSION)
      yield* (tested ? ok : warn)(
        `claude: ${executable.command} (from ${executable.source}) is ${version.right}` +
          (tested ? " (the tested version)" : `; flotta is tested with ${ClaudeCli.TESTED_VERSION}`)
      )
    }

    const creds = yield* credentials
    yield* Option.match(creds, {
      onNone: () =>
        warn("credentials: none found (set ANTHROPIC_API_KEY or log in with `claude`); --simulate needs none"),
      onSome: (where) => ok(`credentials: ${where}`)
    })
    const baseUrl = yield* env("ANTHROPIC_BASE_URL")
    if (Option.isSome(baseUrl)) yield* ok(`endpoint: ANTHROPIC_BASE_URL=${baseUrl.value}`)

    if (Either.isRight(loaded)) {
      const inspected = yield* Effect.either(StoreAccess.inspect(Composition.storeFor(loaded.right, true)))
      if (Either.isLeft(inspected)) {
        yield* bad(`store: ${inspected.left.message}`)
        failure ??= inspected.left
      } else {
        yield* storeLine(inspected.right, { ok, warn })
      }
      const live = yield* ClientCommands.serveStoreHealth(loaded.right)
      if (Option.isSome(live)) {
        const { health, url } = live.value
        yield* Option.match(health, {
          onNone: () => ok(`store: in use by the serve at ${url}, ok`),
          onSome: (h) => warn(`store: in use by the serve at ${url}, ${Views.describeHealth(h)}`)
        })
      }
    }

    if (failure !== undefined) return yield* Effect.fail(failure)
  })).pipe(Command.withDescription("Check the claude binary, its version, credentials, the config and the store"))
