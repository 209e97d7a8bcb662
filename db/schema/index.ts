export * from './enums';
export * from './lenders';
export * from './jobs';
export * from './webhooks';
export * from './balances';
export * from './schedules';
export * from './sandbox-processor';
