// Runs a command against one freshly started bc-server: builds the binary, starts `bc-server dev`,
// passes its address and admin token to the command's environment, and stops the server after.
// Usage: node test/with-server.mjs <command> [args...]; exits with the command's status.
import { spawn } from "node:child_process";
import { startServer, tail } from "./helpers/server.mjs";

const [command, ...args] = process.argv.slice(2);
if (!command) {
  console.error("usage: with-server.mjs <command> [args...]");
  process.exit(2);
}

// A server already given from outside is used as is (startServer sees the same variables).
const server = await startServer();
let status = 1;
try {
  status = await new Promise((res, rej) => {
    const child = spawn(command, args, {
      stdio: "inherit",
      env: {
        ...process.env,
        BC_TEST_SERVER_URL: server.url,
        BC_TEST_ADMIN_TOKEN: server.adminToken,
        BC_TEST_SERVER_LOG: server.logFile,
        BC_TEST_SIMULATOR_URL: server.simulatorUrl ?? "",
      },
    });
    child.once("error", rej);
    child.once("exit", (code, signal) => res(code ?? (signal ? 1 : 0)));
  });
  if (status !== 0 && server.logFile) {
    console.error(`--- last lines of the server log (${server.logFile}) ---\n${tail(server.logFile)}`);
  }
} finally {
  try {
    await server.stop({ keepLog: status !== 0 });
  } catch (err) {
    console.error(String(err));
    status = status || 1;
  }
}
process.exit(status);
