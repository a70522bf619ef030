/**
 * `flotta doctor`: is this machine ready? The claude binary in use and its version against the tested one,
 * whether credentials are present, and whether the config is valid. Exits non-zero when something blocks work.
 */
import { Command } from "@effect/cli"
import { Command as Process, FileSystem } from "@effect/platform"
import * as ClaudeCli from "@flotta/core/ClaudeCli"
import { SpawnFailed } from "@flotta/core/Errors"
import { Config, Effect, Either, Option } from "effect"
import * as os from "node:os"
import * as path from "node:path"
import * as ConfigFile from "./ConfigFile.js"
import * as Output from "./Output.js"
import * as Shared from "./SharedOptions.js"

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

export const command = Command.make("doctor", { config: Shared.config }, (flags) =>
  Effect.gen(function*() {
    const ok = (text: string) => Output.stdout(`  ok    ${text}`)
    const warn = (text: string) => Output.stdout(`  warn  ${text}`)
    const bad = (text: string) => Output.stdout(`  FAIL  ${text}`)
    let failure: ConfigFile.ConfigFileError | SpawnFailed | undefined
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

    if (failure !== undefined) return yield* Effect.fail(failure)
  })).pipe(Command.withDescription("Check the claude binary, its version, credentials and the config"))
