/**
 * The process seam below `Agent`: what starting one `claude` process takes (`StartOptions`), what it gives back
 * (`ClaudeProcess`, its `ExitInfo`) and how it fails. `ClaudeCli` is the service that starts them; its live layers
 * run a real child (`ClaudeSession`), and `@flotta/core/Testing` implements the same seam in memory.
 */
import type { Deferred, Duration, Effect } from "effect"
import { Data } from "effect"
import type * as Protocol from "./ClaudeProtocol.js"

export interface ClaudeExecutable {
  /** The program to execute. */
  readonly command: string
  /** Arguments placed before the claude flags (a fake CLI script, for example). */
  readonly prefixArgs: ReadonlyArray<string>
  /** Where the executable came from, for `doctor` and error messages (`memory`: `@flotta/core/Testing`). */
  readonly source: "config" | "env" | "dependency" | "path" | "custom" | "memory"
}

export interface ExitInfo {
  readonly exitCode: number | null
  readonly stderr: string
}

/** The frames of turns a process hands its agent (the control protocol stays inside the process). */
export type TurnFrame = Exclude<
  Protocol.Frame,
  { readonly _tag: "ControlRequest" | "ControlResponse" | "ControlCancel" }
>

/** A control request this host sent was answered with an error, or the process went away first. */
export class ControlRequestFailed extends Data.TaggedError("ControlRequestFailed")<{
  readonly subtype: string
  readonly reason: string
}> {}

/** Answers the CLI's own control requests (`can_use_tool`, hooks, ...): the inner `response` object. */
export type ControlHandler = (
  request: Protocol.ControlRequestFrame["request"]
) => Effect.Effect<
  { readonly _tag: "Success"; readonly response: unknown } | { readonly _tag: "Error"; readonly error: string }
>

export interface StartOptions {
  /** The agent's name (for logs and for implementations that script per agent). */
  readonly name: string
  readonly args: ReadonlyArray<string>
  readonly cwd: string
  /** Added to the host's environment (less the parent-session markers). */
  readonly env: Readonly<Record<string, string>>
  readonly onControlRequest: ControlHandler
  /**
   * Each turn frame, in order, called synchronously by whatever reads the process's output: it must not throw
   * or block (the agent records the frame and completes its turn on the spot).
   */
  readonly onFrame: (frame: TurnFrame, now: number) => void
  /** Told once, when the process has exited by itself (not when its scope stops it). */
  readonly onExit: (exit: ExitInfo) => void
  /** How long a child may take to exit after stdin EOF, then after SIGTERM (default 2 s, then 5 s). */
  readonly eofGrace?: Duration.DurationInput
  readonly termGrace?: Duration.DurationInput
  /**
   * The process must run sandboxed (its `--settings` turn the CLI's sandbox on): it does not start unless the
   * sandbox can run here (`SandboxUnavailable`).
   */
  readonly sandboxed?: boolean
}

/** The process could not be started at all (no binary, no working directory, ...). */
export class StartError extends Data.TaggedError("StartError")<{ readonly reason: string }> {}

/** One running `claude` process, as its agent sees it. Closing the scope it was started in stops it. */
export interface ClaudeProcess {
  /** The OS process id; `null` for a process that is not an OS process (in memory). */
  readonly pid: number | null
  /** Sends one user turn; it never waits (the line is queued for the process's one writer). */
  readonly sendUser: (text: string) => void
  /** Sends a control request and waits for its answer. */
  readonly request: (
    request: Record<string, unknown> & { readonly subtype: string }
  ) => Effect.Effect<unknown, ControlRequestFailed>
  /** Completes when the process has exited. */
  readonly exited: Deferred.Deferred<ExitInfo>
  /** Milliseconds (Clock time) of its last output: stall detection reads it. */
  readonly lastOutputAt: () => number
  readonly stderrTail: () => string
  /** Ends its input: the CLI exits on its own shortly after. */
  readonly endInput: Effect.Effect<void>
}
