/**
 * Sandboxed agents. The `sandbox` option as data (`SandboxData`: `true`, or `{ network: { allow }, writable }`),
 * what it means for one agent (`Confinement`: where it may write, which hosts it may reach), and how it is kept:
 *
 * - the claude CLI's own OS sandbox for its Bash tool (bubblewrap and socat on Linux, Seatbelt on macOS), turned on
 *   by the `--settings` JSON `settings` builds: commands write only in the working directory and the `writable`
 *   paths, reach only the allowed hosts (through the CLI's proxy; hosts not listed are refused, never asked about),
 *   may not leave the sandbox (`allowUnsandboxedCommands: false`), and the CLI refuses to start without a working
 *   sandbox (`failIfUnavailable`);
 * - a guard in the host for the tools that sandbox does not cover, because they run inside the CLI itself: Write,
 *   Edit, MultiEdit and NotebookEdit outside the writable paths, WebFetch of a host not allowed (`refusal`);
 * - the check, before any process starts, that the sandbox can run on this machine (`availability`).
 *
 * A sandbox only narrows what the permission allows: Bash still goes through the permission, never auto-allowed
 * (`autoAllowBashIfSandboxed: false`), and the guarded tools always reach the host's answer.
 */
import { Effect, Either, Option, ParseResult, Predicate, Schema } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Decode from "./Decode.js"
import { SandboxUnavailable } from "./Errors.js"

// ------------------------------------------------------------------------------------------------ the option

const HOST_NAME = /^(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/i

/** What is wrong with a host entry, or `undefined` when it is one: `github.com`, `*.github.com`, `127.0.0.1:8080`. */
export const hostProblem = (host: string): string | undefined => {
  if (host === "*" || host === "*.*") return "would allow every host: name the hosts, e.g. github.com"
  if (host.includes("/")) return "is a URL or a path, not a host: give a host name such as github.com"
  const match = /^(.*?)(?::(\d+))?$/.exec(host)!
  const port = match[2] === undefined ? undefined : Number(match[2])
  if (port !== undefined && !(port >= 1 && port <= 65_535)) return "has a port outside 1-65535"
  if (!HOST_NAME.test(match[1]!)) {
    return "is not a host such as github.com, *.github.com (its subdomains) or 127.0.0.1:8080 (one port)"
  }
  return undefined
}

export const Host = Schema.String.pipe(
  Schema.filter((host) => {
    const problem = hostProblem(host)
    return problem === undefined || `${JSON.stringify(host)} ${problem}`
  })
)

export const WritablePath = Schema.String.pipe(
  Schema.filter((p) =>
    p.length === 0
      ? "an empty path: give a directory (absolute, or relative to the agent's cwd)"
      : p.startsWith("~")
      ? `${JSON.stringify(p)} starts with ~, which is not expanded: give an absolute path`
      : true
  )
)

/**
 * `true`: Bash writes only in the working directory (a run's worktree) and reaches no network. The object form
 * adds hosts it may reach (`network.allow`) and paths it may write (`writable`). `false`: not sandboxed (to turn
 * off a `fleetDefaults` sandbox for one entry).
 */
export const SandboxData = Schema.Union(
  Schema.Boolean,
  Schema.Struct({
    network: Schema.optionalWith(Schema.Struct({ allow: Schema.Array(Host) }), { exact: true }),
    writable: Schema.optionalWith(Schema.Array(WritablePath), { exact: true })
  })
)
export type SandboxData = typeof SandboxData.Type

/** What a sandboxed agent may do beyond reading: write under `writable` (its cwd first), reach `hosts`. */
export interface Confinement {
  readonly cwd: string
  /** Absolute: the cwd, then the `writable` paths. */
  readonly writable: ReadonlyArray<string>
  readonly hosts: ReadonlyArray<string>
}

const decode = Schema.decodeUnknownEither(SandboxData, { errors: "all", onExcessProperty: "error" })

/**
 * The option checked and made absolute (its `writable` paths resolved against `cwd`), as an agent keeps and stores
 * it; `undefined` when it is not sandboxed. A bad value is `{ path, reason }`, the path under `sandbox`.
 */
export const normalize = (
  input: unknown,
  cwd: string
): Either.Either<SandboxData | undefined, { readonly path: string; readonly reason: string }> => {
  if (input === undefined || input === false) return Either.right(undefined)
  const decoded = decode(input)
  if (Either.isLeft(decoded)) {
    const issues = ParseResult.ArrayFormatter.formatErrorSync(decoded.left)
    // The deepest issue says what is wrong; a union also reports that the value is no boolean.
    const issue = [...issues].sort((a, b) => b.path.length - a.path.length)[0]!
    return Either.left({ path: Decode.formatPath("sandbox", issue.path), reason: issue.message })
  }
  const sandbox = decoded.right
  if (sandbox === true || sandbox === false) return Either.right(sandbox || undefined)
  return Either.right({
    ...(sandbox.network === undefined ? {} : { network: { allow: [...new Set(sandbox.network.allow)] } }),
    ...(sandbox.writable === undefined ? {} : {
      writable: [...new Set(sandbox.writable.map((p) => path.resolve(cwd, p)))]
    })
  })
}

/**
 * Options (an agent's, a run's) with their `sandbox` checked and normalized against their `cwd`: without it when it
 * is off. A sandboxed agent's further flags may carry only inline `--settings` (see `extraArgsProblem`).
 */
export const withOptions = <
  O extends { readonly sandbox?: SandboxData; readonly cwd?: string; readonly extraArgs?: ReadonlyArray<string> }
>(
  options: O
): Either.Either<
  Omit<O, "sandbox"> & { readonly sandbox?: SandboxData },
  { readonly path: string; readonly reason: string }
> => {
  if (options.sandbox === undefined) return Either.right(options)
  const { sandbox: given, ...rest } = options
  return Either.flatMap(normalize(given, path.resolve(options.cwd ?? ".")), (sandbox) => {
    if (sandbox === undefined) return Either.right(rest)
    const problem = extraArgsProblem(options.extraArgs ?? [])
    return problem === undefined
      ? Either.right({ ...rest, sandbox })
      : Either.left({ path: "extraArgs", reason: problem })
  })
}

/** What a (normalized) option means for an agent in `cwd`; `null` when it is not sandboxed. */
export const confinement = (sandbox: SandboxData | undefined, cwd: string): Confinement | null => {
  if (sandbox === undefined || sandbox === false) return null
  const more = sandbox === true ? {} : sandbox
  return {
    cwd,
    writable: [cwd, ...(more.writable ?? []).map((p) => path.resolve(cwd, p)).filter((p) => p !== cwd)],
    hosts: more.network?.allow ?? []
  }
}

// ------------------------------------------------------------------------------------------------ the CLI's settings

/**
 * The `sandbox` section of the CLI's settings (2.1.332; CLAUDE-CLI.md, "Sandbox"). From `--settings`, these hold
 * against the project's own `.claude/settings*.json`: with `allowUnsandboxedCommands: false` there, a project's
 * `excludedCommands`, `allowWrite` and `allowedDomains` are ignored, and `strictAllowlist` leaves its domains out.
 */
export const settings = (c: Confinement): { readonly sandbox: Record<string, unknown> } => ({
  sandbox: {
    enabled: true,
    failIfUnavailable: true,
    // Bash stays under the agent's permission (the host answers it): a sandbox narrows, it never allows.
    autoAllowBashIfSandboxed: false,
    // The model cannot ask to run a command outside (the Bash tool's `dangerouslyDisableSandbox`).
    allowUnsandboxedCommands: false,
    // Hosts not listed are refused, not put to the host as a `SandboxNetworkAccess` permission request.
    network: { allowedDomains: [...c.hosts], strictAllowlist: true },
    filesystem: { allowWrite: c.writable.slice(1) }
  }
})

const SETTINGS = "--settings"

/** The `--settings` values among further CLI flags, and the flags without them. */
const splitSettings = (args: ReadonlyArray<string>) => {
  const values: Array<string> = []
  const rest: Array<string> = []
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    if (arg === SETTINGS && i + 1 < args.length) values.push(args[++i]!)
    else if (arg.startsWith(`${SETTINGS}=`)) values.push(arg.slice(SETTINGS.length + 1))
    else rest.push(arg)
  }
  return { values, rest }
}

const asObject = (text: string): Record<string, unknown> | undefined => {
  try {
    const value: unknown = JSON.parse(text)
    return Predicate.isRecord(value) ? value : undefined
  } catch {
    return undefined
  }
}

/** Why further CLI flags cannot go with a sandbox, if they cannot: a `--settings` file, which cannot be merged. */
export const extraArgsProblem = (extraArgs: ReadonlyArray<string>): string | undefined =>
  splitSettings(extraArgs).values.some((value) => asObject(value) === undefined)
    ? "a sandboxed agent's --settings must be inline JSON (an object): flotta merges its sandbox into it, and " +
      "the CLI takes only the last --settings"
    : undefined

/**
 * The flags a sandboxed agent starts with after the others: one `--settings`, the sandbox merged into any settings
 * given among the further flags (their keys stay, but `sandbox` is the option's), then those flags without theirs.
 */
export const settingsArgs = (c: Confinement, extraArgs: ReadonlyArray<string>): ReadonlyArray<string> => {
  const { rest, values } = splitSettings(extraArgs)
  const given = values.reduce<Record<string, unknown>>((acc, value) => ({ ...acc, ...asObject(value) }), {})
  return [SETTINGS, JSON.stringify({ ...given, ...settings(c) }), ...rest]
}

// ------------------------------------------------------------------------------------------------ the host's guard

/** Tools that run inside the CLI, outside its OS sandbox: they always reach the host, which checks them. */
export const GUARDED_TOOLS: ReadonlyArray<string> = ["Write", "Edit", "MultiEdit", "NotebookEdit", "WebFetch"]

/** A path with its symbolic links resolved as far as it exists (a file to be created need not). */
const resolveLinks = (file: string): string => {
  const missing: Array<string> = []
  let at = path.resolve(file)
  while (true) {
    try {
      return path.join(fs.realpathSync(at), ...missing.reverse())
    } catch {
      const parent = path.dirname(at)
      if (parent === at) return path.resolve(file)
      missing.push(path.basename(at))
      at = parent
    }
  }
}

const within = (root: string, file: string) => {
  const relative = path.relative(root, file)
  return relative === "" || !(relative === ".." || relative.startsWith(`..${path.sep}`) || path.isAbsolute(relative))
}

/** Whether a sandboxed agent may write `file` (relative to its cwd): under one of its writable paths. */
export const mayWrite = (c: Confinement, file: string): boolean => {
  const target = resolveLinks(path.resolve(c.cwd, file))
  return c.writable.some((root) => within(resolveLinks(root), target))
}

/** Whether an allowed host (`github.com`, `*.github.com`, `127.0.0.1:8080`) covers a host name and port. */
export const hostAllowed = (hosts: ReadonlyArray<string>, hostname: string, port: number): boolean =>
  hosts.some((entry) => {
    const match = /^(.*?)(?::(\d+))?$/.exec(entry.toLowerCase())!
    const name = match[1]!
    if (match[2] !== undefined && Number(match[2]) !== port) return false
    const host = hostname.toLowerCase().replace(/^\[|\]$/g, "")
    return name.startsWith("*.") ? host.endsWith(name.slice(1)) : host === name
  })

const DEFAULT_PORTS: Readonly<Record<string, number>> = { "http:": 80, "https:": 443 }

/**
 * Why the host refuses one tool call of a sandboxed agent, or `undefined` when the sandbox leaves it to the
 * permission: a file tool writing outside the writable paths, WebFetch of a host not allowed, and the CLI's
 * request for a host not allowed (`SandboxNetworkAccess`, which `strictAllowlist` already stops).
 */
export const refusal = (c: Confinement, tool: string, input: Record<string, unknown>): string | undefined => {
  const refuse = (what: string) => `Permission denied by flotta's sandbox: ${what}`
  const file = tool === "NotebookEdit" ? input["notebook_path"] : input["file_path"]
  if (["Write", "Edit", "MultiEdit", "NotebookEdit"].includes(tool) && typeof file === "string") {
    return mayWrite(c, file) ? undefined : refuse(
      `${tool} of ${path.resolve(c.cwd, file)} is outside the paths this agent may write (${c.writable.join(", ")})`
    )
  }
  const allowed = c.hosts.length === 0 ? "none" : c.hosts.join(", ")
  if (tool === "WebFetch" && typeof input["url"] === "string") {
    if (!URL.canParse(input["url"])) return refuse(`WebFetch of ${JSON.stringify(input["url"])}, not a URL`)
    const url = new URL(input["url"])
    const port = url.port === "" ? DEFAULT_PORTS[url.protocol] ?? 0 : Number(url.port)
    return hostAllowed(c.hosts, url.hostname, port)
      ? undefined
      : refuse(`WebFetch of ${url.host} is outside the hosts this agent may reach (${allowed})`)
  }
  if (tool === "SandboxNetworkAccess") {
    return refuse(`${String(input["host"])} is outside the hosts this agent may reach (${allowed})`)
  }
  return undefined
}

// ------------------------------------------------------------------------------------------------ this machine

/** What the machine looks like to the check: injected in tests, read from the machine in `here`. */
export interface Machine {
  readonly platform: NodeJS.Platform
  /** The child's `PATH`, where the CLI looks for its tools. */
  readonly path: string
  readonly isExecutable: (file: string) => boolean
  /** `/etc/os-release`'s text on Linux, for the install command. */
  readonly osRelease: string
}

export interface Unavailable {
  readonly reason: string
  readonly missing: ReadonlyArray<string>
  readonly install: string
}

const LINUX_TOOLS = [{ tool: "bwrap", pkg: "bubblewrap" }, { tool: "socat", pkg: "socat" }]
const SEATBELT = "/usr/bin/sandbox-exec"

/** The command that installs packages on this Linux (from os-release's ID and ID_LIKE; Debian's by default). */
export const installCommand = (osRelease: string, packages: ReadonlyArray<string>): string => {
  const ids = [...osRelease.matchAll(/^(?:ID|ID_LIKE)=("?)([^"\n]*)\1$/gm)].flatMap((m) => m[2]!.split(/\s+/))
  const list = packages.join(" ")
  if (ids.some((id) => ["fedora", "rhel", "centos"].includes(id))) return `dnf install -y ${list}`
  if (ids.includes("arch")) return `pacman -S --noconfirm ${list}`
  if (ids.includes("alpine")) return `apk add ${list}`
  if (ids.some((id) => id.includes("suse"))) return `zypper install -y ${list}`
  return `apt-get install -y ${list}`
}

/**
 * Why the CLI's sandbox cannot run on a machine, if it cannot: on Linux `bwrap` (bubblewrap) and `socat` must be on
 * the child's PATH; macOS has Seatbelt (`sandbox-exec`) built in; the CLI sandboxes nothing elsewhere (on Windows
 * its sandbox needs a set-up flotta does not do).
 */
export const availability = (machine: Machine): Option.Option<Unavailable> => {
  if (machine.platform === "linux") {
    const dirs = machine.path.split(path.delimiter).filter((dir) => dir.length > 0)
    const absent = LINUX_TOOLS.filter(({ tool }) => !dirs.some((dir) => machine.isExecutable(path.join(dir, tool))))
    if (absent.length === 0) return Option.none()
    const names = absent.map(({ pkg, tool }) => (tool === pkg ? tool : `${tool} (${pkg})`))
    return Option.some({
      reason: `${names.join(" and ")} ${absent.length === 1 ? "is" : "are"} not on PATH`,
      missing: absent.map(({ tool }) => tool),
      install: installCommand(machine.osRelease, absent.map(({ pkg }) => pkg))
    })
  }
  if (machine.platform === "darwin") {
    return machine.isExecutable(SEATBELT)
      ? Option.none()
      : Option.some({
        reason: `${SEATBELT} (Seatbelt, part of macOS) is missing`,
        missing: ["sandbox-exec"],
        install: ""
      })
  }
  return Option.some({
    reason: `the claude CLI has no sandbox flotta can use on ${machine.platform}: it sandboxes Bash on Linux ` +
      `(bubblewrap and socat) and macOS`,
    missing: [],
    install: ""
  })
}

const isExecutable = (file: string) => {
  try {
    fs.accessSync(file, fs.constants.X_OK)
    return fs.statSync(file).isFile()
  } catch {
    return false
  }
}

/** This machine, for a child whose PATH is `childPath`. */
export const here = (childPath: string): Machine => ({
  platform: process.platform,
  path: childPath,
  isExecutable,
  osRelease: (() => {
    try {
      return fs.readFileSync("/etc/os-release", "utf8")
    } catch {
      return ""
    }
  })()
})

/** Fails with `SandboxUnavailable` for agent `name` when the sandbox cannot run on `machine`. */
export const check = Effect.fnUntraced(function*(name: string, machine: Machine) {
  return yield* Option.match(availability(machine), {
    onNone: () => Effect.void,
    onSome: (problem) => new SandboxUnavailable({ name, ...problem, missing: [...problem.missing] })
  })
})

/** A command that runs nothing but the sandbox itself, as the CLI sets it up (for `doctor`), when there is one. */
export const probe = (platform: NodeJS.Platform): ReadonlyArray<string> | undefined =>
  platform === "linux"
    ? ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-net", "--unshare-pid", "true"]
    : platform === "darwin"
    ? [SEATBELT, "-p", "(version 1)(allow default)", "/usr/bin/true"]
    : undefined
