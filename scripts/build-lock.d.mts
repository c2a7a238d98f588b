/** The types of build-lock.mjs (a plain script: npm install runs it before anything is compiled). */
export function takeBuildLock(lock: string, label: string, waitMs: number): Promise<() => void>;
