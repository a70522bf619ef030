#!/usr/bin/env node
/**
 * The `flotta` command's entry point. `flotta --help` and `flotta --version` are answered here, from data, before
 * any of the tree or of Effect is loaded; everything else goes to `Launch`, which loads only the command it runs.
 */
import { answerFromData } from "./Commands.js"
import { version } from "./Version.js"

// A reader that goes away early (`flotta reports | head`) ends the command quietly, as SIGPIPE ends a Unix tool:
// the program is interrupted (its finalizers stop any children), and no write error is thrown at the person.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code === "EPIPE") process.kill(process.pid, "SIGTERM")
})

const answer = answerFromData(process.argv, version)
if (answer !== undefined) process.stdout.write(answer + "\n")
else void import("./Launch.js").then(({ launch }) => launch(process.argv))
