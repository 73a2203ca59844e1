import { join } from 'node:path';
import { mkdirSync } from 'node:fs';
import { startFakeModel, type FakeModel, type FakeScript } from '../gateway/fake-model.js';
import { startGateway, type GatewaySummary } from '../gateway/gateway.js';

/** One attempt's model: the recording gateway, in front of a real upstream or a scripted fake. */
export interface ModelSession {
  /** For agents on the host (local backend). */
  url: string;
  /** For sandboxed agents: the gateway's unix socket, forwarded inside. */
  socket?: string;
  summary(): GatewaySummary;
  close(): Promise<void>;
}

export interface ModelOptions {
  upstream?: string;
  fakeScript?: FakeScript;
  caps: { maxTokens?: number; maxCostUsd?: number };
  markers: Record<string, string>;
  logFile: string;
  /** When set, the gateway listens on a unix socket in this directory (sandboxed agents). */
  socketDir?: string | undefined;
}

export async function openModel(options: ModelOptions): Promise<ModelSession> {
  let fake: FakeModel | undefined;
  if (options.fakeScript) fake = await startFakeModel(options.fakeScript, { port: 0 });
  const upstream = fake?.url ?? options.upstream!;
  let socket: string | undefined;
  if (options.socketDir) {
    mkdirSync(options.socketDir, { recursive: true, mode: 0o755 });
    socket = join(options.socketDir, 'gateway.sock');
  }
  const gateway = await startGateway({
    upstream,
    listen: socket ? { socket } : { port: 0 },
    caps: options.caps,
    markers: options.markers,
    logFile: options.logFile,
  });
  return {
    url: gateway.url ?? '',
    ...(socket ? { socket } : {}),
    summary: () => gateway.summary(),
    close: async () => {
      await gateway.close();
      await fake?.close();
    },
  };
}
