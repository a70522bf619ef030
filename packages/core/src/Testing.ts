/**
 * `@flotta/core/Testing`: the whole fleet with an in-memory Claude, for tests that run under `TestClock`.
 *
 * `Testing.layer(options)` provides `Flotta` and the rest of the engine's services exactly as `Flotta.layer`
 * does, but below `Agent` sits a scripted model instead of a `claude` process: the agent's queue, permission
 * handling, supervision, the report log and transcripts run unchanged on top of it. No process starts, and
 * every timer (a slow reply, the stall watchdog, timeouts, restart backoff) runs on the Effect `Clock`, so
 * `TestClock.adjust` drives them.
 *
 * The model is a function of `{ agent, prompt, history, turn }` returning a `Reply`: a plain string, or one
 * of `toolUse`, `delay`, `apiError`, `crash`, `hang`, `structured`, and the rate limits `usageLimit`,
 * `rateLimited` and `usageWarning`. `history` holds every earlier prompt of the agent's conversation and survives
 * a crash and resume, as the real CLI's session file does.
 *
 * Sandboxed agents: the model sees the sandbox the process was started with (`sandbox`: where its commands may
 * write, which hosts they may reach, read back from its `--settings` as the CLI reads them), and the fleet's own
 * guard answers its Write, Edit and WebFetch calls as it does over the real CLI. `sandbox: "unavailable"` makes the
 * machine one where the sandbox cannot run: a sandboxed agent or run fails with `SandboxUnavailable`, never started.
 *
 * Runs in worktrees, best-of-N attempts and verifies act on git and `sh` on this machine, unless `git:
 * Testing.git({ check })` keeps the repositories in memory: worktrees are records, and each shell check is a
 * function of its command, directory and environment (an attempt's `FLOTTA_ATTEMPT` among it), and what a run
 * wrote there is what `changes` says (its diff is taken from them; its uncommitted work until a commit, which
 * `commitFails` may refuse).
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { Layer } from "effect"
import { Approvals } from "./Approvals.js"
import type { StoreError } from "./Errors.js"
import type { FleetSettingsInput } from "./FleetConfig.js"
import * as Flotta from "./Flotta.js"
import { Git } from "./Git.js"
import type { CliOptions } from "./internal/memoryCli.js"
import { cli } from "./internal/memoryCli.js"
import { Store } from "./Store.js"

export { cli, disk } from "./internal/memoryCli.js"
export type { Disk } from "./internal/memoryCli.js"
export { layer as git } from "./internal/memoryGit.js"
export type { CheckInput, CheckOutcome, FileChange, MemoryGitOptions } from "./internal/memoryGit.js"
export {
  apiError,
  crash,
  delay,
  echo,
  hang,
  rateLimited,
  structured,
  toolUse,
  usageLimit,
  usageWarning
} from "./internal/scriptedModel.js"
export type { Model, ModelInput, Reply, SandboxView, ToolDecision, ToolScript } from "./internal/scriptedModel.js"

export interface Options extends CliOptions, FleetSettingsInput {
  /** Where the fleet's state lives (default: `Store.memory`, new per build). */
  readonly store?: Layer.Layer<Store, StoreError>
  /**
   * The repositories runs act on (worktrees, commits, checks): `Testing.git({ check })` keeps them in memory, with
   * each shell check a function; the default is git and `sh` on this machine.
   */
  readonly git?: Layer.Layer<Git>
}

/**
 * The fleet over the in-memory CLI: `Flotta`, `Runs`, `Registry`, `ReportLog` and `Permission`, as
 * `Flotta.layer` provides them. Options: the model, start failures and delay, cost, and the engine's settings.
 * Like the cli, it is an edge: it provides the platform (`NodeContext`) itself.
 */
export const layer = (options: Options = {}) => {
  const {
    contextWindow: _window,
    costPerCall: _cost,
    disk: _disk,
    diskFull: _diskFull,
    failStart: _fail,
    git,
    model: _model,
    sandbox: _sandbox,
    startDelay: _delay,
    store,
    ...settings
  } = options
  return Flotta.services(cli(options), settings, Approvals.pendingDecisions, store ?? Store.memory, git ?? Git.live)
    .pipe(Layer.provide(NodeContext.layer))
}
