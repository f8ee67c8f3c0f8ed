// The two Node globals the smoke scenario uses, without pulling @types/node into the pins.
declare const process: { env: Record<string, string | undefined>; exit(code: number): never };
