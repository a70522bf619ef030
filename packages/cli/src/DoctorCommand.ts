/**
 * `flotta doctor`: is this machine ready? The claude binary in use and its version against the tested one,
 * whether credentials are present, whether the config is valid, the store `serve` would use: its kind,
 * place, size, schema version and health (read-only, so beside a running serve too; and as that serve sees it,
 * when one answers), the shell runs' records waiting in its inbox (or set aside), the notification targets with their delivery state from that store and the triggers, and
 * whether the CLI's sandbox works here (its tools, then one command run in it). Exits non-zero when something
 * blocks work (a missing sandbox does when the config has sandboxed entries), and with `ConfigFileError` (3) when
 * the config has any mistake, each entry that serve would skip listed with its path and why.
 */
import { Command } from "@effect/cli"
import { Command as Process, FileSystem } from "@effect/platform"
import * as ClaudeCli from "@flotta/core/ClaudeCli"
import { SandboxUnavailable, SpawnFailed } from "@flotta/core/Errors"
import type { StoreError } from "@flotta/core/Errors"
import * as RunInbox from "@flotta/core/RunInbox"
import * as Sandbox from "@flotta/core/Sandbox"
import * as Spec from "@flotta/core/Spec"
import * as Notifier from "@flotta/webhooks/Notifier"
import { targetOf } from "@flotta/webhooks/WebhooksConfig"
import { Config, Effect, Either, Option, Stream } from "effect"
import * as os from "node:os"
import * as path from "node:path"
import * as ConfigFile from "./ConfigFile.js"
import * as Connection from "./Connection.js"
import * as Output from "./Output.js"
import * as Shared from "./SharedOptions.js"
import * as StoreAccess from "./StoreAccess.js"
import * as StoreTarget from "./StoreTarget.js"
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

/** Runs a command to its end: its exit code and stderr (the sandbox's probe). */
const runProbe = (argv: ReadonlyArray<string>) =>
  Effect.scoped(Effect.gen(function*() {
    const proc = yield* Process.start(Process.make(argv[0]!, ...argv.slice(1)))
    return yield* Effect.all({
      stderr: proc.stderr.pipe(Stream.decodeText(), Stream.mkString),
      stdout: proc.stdout.pipe(Stream.runDrain),
      code: proc.exitCode
    }, { concurrency: "unbounded" })
  })).pipe(Effect.timeout("20 seconds"), Effect.either)

/**
 * Whether the CLI's sandbox works here: its tools on PATH, then one command run in a sandbox as the CLI sets it up
 * (`bwrap` with its own network and pids). Without it, `fail` when a sandboxed session of the config could not
 * boot, else `warn` (naming the sandboxed run templates, which would fail when fired).
 */
const sandboxLine = (
  sandboxed: { readonly sessions: ReadonlyArray<string>; readonly templates: ReadonlyArray<string> },
  say: { readonly ok: (text: string) => Effect.Effect<void>; readonly warn: (text: string) => Effect.Effect<void> },
  bad: (text: string) => Effect.Effect<void>
) =>
  Effect.gen(function*() {
    const PATH = Option.getOrElse(yield* env("PATH"), () => "")
    const names = [...sandboxed.sessions, ...sandboxed.templates]
    const needed = names.length === 0
      ? " (only sandboxed agents need it)"
      : ` (sandboxed in the config: ${names.join(", ")})`
    const blocks = sandboxed.sessions.length > 0
    const fail = (reason: string, install: string, missing: ReadonlyArray<string>) =>
      blocks
        ? new SandboxUnavailable({ name: sandboxed.sessions[0]!, reason, install, missing: [...missing] })
        : undefined
    const problem = Sandbox.availability(Sandbox.here(PATH))
    if (Option.isSome(problem)) {
      const { install, missing, reason } = problem.value
      const fix = install.length === 0 ? "" : `; install ${missing.length === 1 ? "it" : "them"}: ${install}`
      yield* (blocks ? bad : say.warn)(`sandbox: ${reason}${fix}${needed}`)
      return fail(reason, install, missing)
    }
    const probe = Sandbox.probe(process.platform)!
    const ran = yield* runProbe(probe)
    if (Either.isRight(ran) && ran.right.code === 0) {
      yield* say.ok(`sandbox: works (\`${probe.join(" ")}\` ran)`)
      return undefined
    }
    const why = Either.isLeft(ran)
      ? String(ran.left)
      : `exit code ${ran.right.code}: ${ran.right.stderr.trim().split("\n")[0] ?? ""}`
    const reason = `its tools are here, but a sandboxed command fails (\`${probe.join(" ")}\`: ${why})`
    yield* (blocks ? bad : say.warn)(`sandbox: ${reason}${needed}`)
    return fail(reason, "", [])
  })

/** The names of the config's sandboxed sessions and run templates. */
const sandboxedEntries = (
  fleet: { readonly sessions: ReadonlyArray<Spec.Spec>; readonly templates: ReadonlyArray<Spec.Spec> }
) => {
  const names = (specs: ReadonlyArray<Spec.Spec>) =>
    specs.filter((s) => s.sandbox !== undefined && s.sandbox !== false).map((s) => s.name)
  return { sessions: names(fleet.sessions), templates: names(fleet.templates) }
}

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
export const storeLine = Effect.fn("DoctorCommand.storeLine")(
  function*(
    inspected: StoreAccess.Inspection,
    say: { readonly ok: (text: string) => Effect.Effect<void>; readonly warn: (text: string) => Effect.Effect<void> }
  ) {
    switch (inspected._tag) {
      case "Memory":
        return yield* say.ok("store: memory (serve and repl keep no state across restarts)")
      case "NotCreated":
        return yield* say.ok(
          `store: sqlite ${inspected.location}: not created yet (the first \`flotta serve\` or \`flotta run\` makes it, on ` +
            `${inspected.driver})`
        )
      case "Found":
        return yield* (inspected.info.health.state === "ok" ? say.ok : say.warn)(
          `store: ${Views.describeStoreWithHealth(inspected.info)}`
        )
    }
  }
)

type Say = { readonly ok: (text: string) => Effect.Effect<void>; readonly warn: (text: string) => Effect.Effect<void> }

/** One target's line: where it is, what it takes, and how its deliveries stand in the store. */
export const notifyLine = (target: {
  readonly url: string
  readonly events: ReadonlyArray<string>
  readonly format: string
  readonly signed: boolean
}, status: Option.Option<Notifier.TargetStatus>): { readonly level: "ok" | "warn"; readonly text: string } => {
  const head = `notify: ${target.url} (${target.format}${target.signed ? ", signed" : ""}) for ` +
    target.events.join(", ")
  if (Option.isNone(status)) return { level: "ok", text: `${head}: nothing sent yet` }
  const s = status.value
  const delivered = `${s.delivered} delivered` +
    (s.lastDelivered === null ? "" : `, the last at ${s.lastDelivered.at}`)
  const failing = s.failing === null
    ? ""
    : `; failing since ${s.failing.since} (${s.failing.attempts} ${
      s.failing.attempts === 1 ? "attempt" : "attempts"
    }, entry ${s.failing.seq}): ${s.failing.reason}`
  const newest = s.dead.at(-1)
  const dead = s.deadCount === 0
    ? ""
    : `; ${s.deadCount} dead ${s.deadCount === 1 ? "letter" : "letters"}` +
      (newest === undefined ? "" : ` (the newest: ${newest.kind} of ${newest.agent}, ${newest.reason})`)
  return {
    level: s.failing === null && s.deadCount === 0 ? "ok" : "warn",
    text: `${head}: ${delivered}${failing}${dead}`
  }
}

/**
 * The notifications (each target, with its delivery state as the store keeps it, read-only) and the triggers
 * (GitHub's, and the routines a secret lets a caller fire).
 */
export const webhookLines = Effect.fn("DoctorCommand.webhookLines")(
  function*(config: ConfigFile.LoadedConfig, say: Say) {
    if (config.notify !== undefined) {
      const targets = config.notify.map((target) => targetOf(target))
      const where = StoreTarget.storeFor(config, true)
      const stored = StoreAccess.exists(where)
        ? yield* Effect.scoped(
          Effect.flatMap(StoreAccess.openReadOnly(where), (store) => Notifier.storedStatus(store, targets))
        ).pipe(Effect.either)
        : Either.right(targets.map(() => Option.none<Notifier.TargetStatus>()))
      if (Either.isLeft(stored)) yield* say.warn(`notify: delivery state unreadable: ${stored.left.message}`)
      for (const [i, target] of targets.entries()) {
        const line = notifyLine(
          { url: target.shown, events: target.events, format: target.format, signed: Option.isSome(target.secret) },
          Either.isRight(stored) ? stored.right[i] ?? Option.none() : Option.none()
        )
        yield* (line.level === "ok" ? say.ok : say.warn)(line.text)
      }
    }
    const secrets = (config.schedule?.routines ?? []).filter((r) => r.secret !== undefined).map((r) => r.name)
    if (config.github === undefined && (config.schedule?.routines.length ?? 0) === 0) return
    const github = config.github === undefined
      ? "github off"
      : `github on (${config.github.on.length} ${config.github.on.length === 1 ? "mapping" : "mappings"})`
    const served = config.mcp !== undefined || config.dashboard !== undefined
    yield* (served || secrets.length === 0 ? say.ok : say.warn)(
      `triggers: ${github}; ` +
        (secrets.length === 0 ? "no routine has a secret" : `routines with a secret: ${secrets.join(", ")}`) +
        (served ? "" : " (no mcp or dashboard section: no server takes the hooks)")
    )
  }
)

/**
 * The store's inbox, when something is in it: shell runs' records waiting to be imported (a serve imports them as it
 * starts), and records the store refused, set aside. Nothing when it is empty, as it is once they have landed.
 */
const inboxLines = (config: ConfigFile.LoadedConfig, say: { readonly warn: (text: string) => Effect.Effect<void> }) =>
  Effect.gen(function*() {
    const inbox = StoreTarget.inboxOf(StoreTarget.storeFor(config, true), config.dir)
    if (inbox === undefined) return
    const waiting = yield* RunInbox.waiting(inbox)
    const records = waiting.flatMap((w) => (w._tag === "Record" ? [w.record.name] : []))
    if (records.length > 0) {
      yield* say.warn(
        `store: ${records.length} shell run record(s) wait in ${inbox} to be imported (${records.join(", ")}); ` +
          "a serve imports them as it starts, or the next `flotta run` when the store is free"
      )
    }
    const unreadable = waiting.filter((w) => w._tag === "Unreadable").length
    if (unreadable > 0) {
      yield* say.warn(`store: ${unreadable} file(s) in ${inbox} are not run records (the next import sets them aside)`)
    }
    const newer = waiting.filter((w) => w._tag === "Newer").length
    if (newer > 0) {
      yield* say.warn(`store: ${newer} run record(s) in ${inbox} are of a newer flotta: upgrade to import them`)
    }
    const fs = yield* FileSystem.FileSystem
    const aside = yield* fs.readDirectory(path.join(inbox, RunInbox.REJECTED)).pipe(Effect.orElseSucceed(() => []))
    if (aside.length > 0) {
      yield* say.warn(
        `store: ${aside.length} run record(s) set aside in ${path.join(inbox, RunInbox.REJECTED)}: the store refused ` +
          "them (a name it held already, or not a record; the serve's log says which)"
      )
    }
  })

/** One line of the doctor's findings: `ok`, `warn` (works, but look) or `fail` (blocks work). */
export interface Check {
  readonly level: "ok" | "warn" | "fail"
  /** What was checked: config, claude, credentials, endpoint, store. */
  readonly topic: string
  readonly text: string
}

const LABELS = { ok: "ok  ", warn: "warn", fail: "FAIL" } as const

const DESCRIPTION = "Check that this machine is ready: the claude binary and its version, credentials, the config, " +
  "the store, the notifications' delivery state and the triggers, and the sandbox (with --json, the checks as " +
  "JSON). Exits non-zero when something blocks work, and with 3 when the config has a mistake, even one that " +
  "serve skips (an agent, routine or GitHub mapping entry)."

/** Each check as it is found (some take seconds), or with `json` all of them as one JSON object at the end. */
const doctor = (flags: { readonly config: Option.Option<string>; readonly json: boolean }) =>
  Effect.gen(function*() {
    const checks: Array<Check> = []
    /** Printed as it is found (some checks take seconds), or kept for the JSON at the end. */
    const say = (level: Check["level"]) => (text: string) => {
      const colon = text.indexOf(":")
      checks.push({ level, topic: colon === -1 ? "" : text.slice(0, colon), text: text.slice(colon + 1).trim() })
      return flags.json ? Effect.void : Output.stdout(`  ${LABELS[level]}  ${text}`)
    }
    const ok = say("ok")
    const warn = say("warn")
    const bad = say("fail")
    let failure: ConfigFile.ConfigFileError | SpawnFailed | StoreError | SandboxUnavailable | undefined
    if (!flags.json) yield* Output.stdout(`flotta doctor (node ${process.version}, ${os.platform()} ${os.arch()})`)

    const loaded = yield* Effect.either(ConfigFile.load(process.cwd(), Option.getOrUndefined(flags.config)))
    if (Either.isLeft(loaded)) {
      yield* bad(`config: ${loaded.left.message}`)
      failure = loaded.left
    } else if (loaded.right.file === null) {
      yield* ok("config: none here (flotta.config.json, .flotta/config.json or flotta.config.ts); run `flotta init`")
    } else {
      const { file, fleet: { fleet }, skipped } = loaded.right
      const declared = `${fleet.sessions.length} session(s), ${fleet.templates.length} run template(s)`
      if (skipped.length === 0) {
        yield* ok(`config: ${file}: ${declared}`)
      } else {
        // Serve boots the rest, but each of these is a mistake in the file: doctor fails until it is fixed.
        const entries = `${skipped.length} ${skipped.length === 1 ? "problem" : "problems"}`
        yield* bad(`config: ${file}: ${declared}; ${entries}, each entry skipped by serve:`)
        for (const rejected of skipped) yield* bad(`config: ${Spec.describeRejected(rejected)} (skipped)`)
        failure = new ConfigFile.ConfigFileError({
          file,
          path: "",
          reason: `${entries} (listed above); serve and repl skip ${
            skipped.length === 1 ? "that entry" : "those entries"
          } and boot the rest`
        })
      }
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
      const inspected = yield* Effect.either(StoreAccess.inspect(StoreTarget.storeFor(loaded.right, true)))
      if (Either.isLeft(inspected)) {
        yield* bad(`store: ${inspected.left.message}`)
        failure ??= inspected.left
      } else {
        yield* storeLine(inspected.right, { ok, warn })
      }
      const live = yield* Connection.serveStoreHealth(loaded.right)
      if (Option.isSome(live)) {
        const { health, url } = live.value
        yield* Option.match(health, {
          onNone: () => ok(`store: in use by the serve at ${url}, ok`),
          onSome: (h) => warn(`store: in use by the serve at ${url}, ${Views.describeHealth(h)}`)
        })
      }
      yield* inboxLines(loaded.right, { warn })
      yield* webhookLines(loaded.right, { ok, warn })
    }

    const sandboxed = Either.isRight(loaded)
      ? sandboxedEntries(loaded.right.fleet.fleet)
      : { sessions: [], templates: [] }
    // Checked whatever failed before: doctor lists every problem it finds.
    const sandbox = yield* sandboxLine(sandboxed, { ok, warn }, bad)
    failure ??= sandbox

    if (flags.json) {
      yield* Output.stdout(JSON.stringify(
        {
          ok: failure === undefined,
          node: process.version,
          platform: `${os.platform()} ${os.arch()}`,
          checks
        },
        null,
        2
      ))
    }
    if (failure !== undefined) return yield* Effect.fail(failure)
  })

export const command = Command.make("doctor", { config: Shared.config, json: Shared.json }, doctor).pipe(
  Command.withDescription(DESCRIPTION)
)
