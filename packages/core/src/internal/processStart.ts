/**
 * Starting an agent's `claude` process: its flags from the agent's options and session, a scope of its own
 * under the agent's, a start slot from the fleet's admission, and readiness (`initialize` answered). The
 * process's frames reach the turn in flight as they come, and its exit ends its service (see `turn.crash`).
 */
import { Deferred, Duration, Effect, ExecutionStrategy, Exit, Option, Scope } from "effect"
import type { ClaudeProcess, ControlHandler, ExitInfo, TurnFrame } from "../ClaudeProcess.js"
import { SpawnFailed } from "../Errors.js"
import { buildArgs } from "./agentOptions.js"
import type { AgentContext, AgentDeps, ProcessEnd, Running } from "./agentState.js"
import * as Turn from "./turn.js"

/** Ready = `initialize` answered. The readiness deadline starts once the process has its start slot. */
const ready = (ctx: AgentContext, process: ClaudeProcess) => {
  const { startTimeout } = ctx.settings
  return process.request({ subtype: "initialize" }).pipe(
    Effect.timeoutFail({ duration: startTimeout, onTimeout: () => ({ timeout: true }) as const }),
    Effect.catchAll((error) =>
      Effect.gen(function*() {
        // Give the exit code and the last stderr lines a moment to arrive: they say why.
        const exit = yield* Deferred.await(process.exited).pipe(Effect.timeoutOption("1 second"))
        const reason = "timeout" in error
          ? `not ready after ${Duration.format(startTimeout)} (no answer to initialize)`
          : Option.isSome(exit)
          ? "the claude process exited during start"
          : error.reason
        return yield* new SpawnFailed({
          name: ctx.name,
          reason,
          exitCode: Option.isSome(exit) ? exit.value.exitCode : null,
          stderr: Option.isSome(exit) ? exit.value.stderr : process.stderrTail()
        })
      })
    )
  )
}

/** Starts a process for the agent's current session (resuming it when it has a conversation). */
export const startProcess = Effect.fnUntraced(
  function*(ctx: AgentContext, deps: AgentDeps, onControlRequest: ControlHandler) {
    const { name, state } = ctx
    const clock = yield* Effect.clock
    const processScope = yield* Scope.fork(ctx.scope, ExecutionStrategy.sequential)
    const args = buildArgs(ctx.options, state.policy, {
      id: state.sessionId,
      resume: state.resumable,
      fork: state.forkedFrom
    })
    const ended = yield* Deferred.make<ProcessEnd>()
    // The process's frames reach the turn in flight on the spot; its exit ends its service.
    const self: { running?: Running } = {}
    const onFrame = (frame: TurnFrame, now: number) => {
      if (self.running !== undefined) Turn.onFrame(ctx, self.running, frame, now)
    }
    const onExit = (exit: ExitInfo) => {
      const end = { _tag: "Exited", exit } as const
      if (self.running !== undefined) Turn.crash(ctx, self.running, end, clock.unsafeCurrentTimeMillis())
      else Deferred.unsafeDone(ended, Exit.succeed(end))
    }
    const { cwd, env } = ctx
    // A live slot first (it may hibernate the longest idle session), held until this process ends; then a start slot.
    const started = deps.liveSlots.acquire(processScope).pipe(Effect.zipRight(deps.startPermit(
      deps.cli.start({ name, args, cwd, env, onControlRequest, onFrame, onExit, sandboxed: ctx.sandbox !== null })
        .pipe(
          Effect.catchTag("StartError", (e) => new SpawnFailed({ name, reason: e.reason, exitCode: null, stderr: "" })),
          Effect.tap((process) => ready(ctx, process)),
          Scope.extend(processScope)
        )
    )))
    const process = yield* started.pipe(Effect.onError(() => Scope.close(processScope, Exit.void)))
    self.running = { process, scope: processScope, ended }
    return self.running
  }
)
