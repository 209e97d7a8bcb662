import type { Stores } from './deps';
import { sqliteScheduleStore } from './modules/schedules/store.sqlite';
import { sqliteEnrollmentStore } from './modules/enrollments/store.sqlite';
import { sqliteMonitorStore } from './modules/enrollments/monitor-store.sqlite';
import { sqliteBankDataConnectionStore } from './modules/bank-data-connections/store.sqlite';
import { sqlitePayCycleStore } from './modules/pay-cycles/store.sqlite';
import { sqliteDispatchStore, sqliteOutcomeStore, sqliteMatchingStore, sqliteDecisionStore, sqlitePaymentReadStore } from './modules/collection/store.sqlite';
import { sqliteCollectionPolicyStore } from './modules/collection-policy/store.sqlite';
import { sqliteBalanceStore } from './modules/balance-requests/store.sqlite';
import { sqliteLinkHealthStore } from './modules/balance-requests/link-health-store.sqlite';
import { sqliteLenderStore } from './modules/lenders/store.sqlite';
import { sqliteReturnRateStore } from './modules/return-rates/store.sqlite';
import { sqliteAchReportStore } from './modules/ach-report/store.sqlite';
import { sqliteUploadStore } from './modules/payment-results-upload/store.sqlite';
import { sqlitePaymentConnectionStore } from './modules/payment-connections/store.sqlite';
import { sqliteFeedStore } from './modules/payment-connections/feed-store.sqlite';
import { sqliteWebhookStore } from './modules/webhooks/store.sqlite';
import { sqlitePortalStore } from './modules/portal/store.sqlite';
import { sqliteBankAccountStore } from './modules/bank-accounts/store.sqlite';
import { sqliteRightsNoticeStore } from './modules/rights-notices/store.sqlite';
import { sqliteFraudStore } from './modules/fraud-monitoring/store.sqlite';
import { pgScheduleStore } from './modules/schedules/store.pg';
import { pgEnrollmentStore } from './modules/enrollments/store.pg';
import { pgMonitorStore } from './modules/enrollments/monitor-store.pg';
import { pgBankDataConnectionStore } from './modules/bank-data-connections/store.pg';
import { pgPayCycleStore } from './modules/pay-cycles/store.pg';
import { pgDispatchStore, pgOutcomeStore, pgMatchingStore, pgDecisionStore, pgPaymentReadStore } from './modules/collection/store.pg';
import { pgCollectionPolicyStore } from './modules/collection-policy/store.pg';
import { pgBalanceStore } from './modules/balance-requests/store.pg';
import { pgLinkHealthStore } from './modules/balance-requests/link-health-store.pg';
import { pgLenderStore } from './modules/lenders/store.pg';
import { pgReturnRateStore } from './modules/return-rates/store.pg';
import { pgAchReportStore } from './modules/ach-report/store.pg';
import { pgUploadStore } from './modules/payment-results-upload/store.pg';
import { pgPaymentConnectionStore } from './modules/payment-connections/store.pg';
import { pgFeedStore } from './modules/payment-connections/feed-store.pg';
import { pgWebhookStore } from './modules/webhooks/store.pg';
import { pgPortalStore } from './modules/portal/store.pg';
import { pgBankAccountStore } from './modules/bank-accounts/store.pg';
import { pgRightsNoticeStore } from './modules/rights-notices/store.pg';
import { pgFraudStore } from './modules/fraud-monitoring/store.pg';

// The stores of each engine, put together once. The composition root (runtime.ts) gives the service the set of
// the engine it runs on; no service, job or route chooses an engine. Nothing else imports a store's
// implementation.

export const sqliteStores: Stores = {
  schedules: sqliteScheduleStore,
  enrollments: sqliteEnrollmentStore,
  monitors: sqliteMonitorStore,
  bankAccounts: sqliteBankAccountStore,
  rightsNotices: sqliteRightsNoticeStore,
  fraud: sqliteFraudStore,
  bankDataConnections: sqliteBankDataConnectionStore,
  payCycles: sqlitePayCycleStore,
  dispatch: sqliteDispatchStore,
  outcomes: sqliteOutcomeStore,
  matching: sqliteMatchingStore,
  decisions: sqliteDecisionStore,
  paymentReads: sqlitePaymentReadStore,
  collectionPolicy: sqliteCollectionPolicyStore,
  balances: sqliteBalanceStore,
  linkHealth: sqliteLinkHealthStore,
  lenders: sqliteLenderStore,
  returnRates: sqliteReturnRateStore,
  achReport: sqliteAchReportStore,
  uploads: sqliteUploadStore,
  paymentConnections: sqlitePaymentConnectionStore,
  feeds: sqliteFeedStore,
  webhooks: sqliteWebhookStore,
  portal: sqlitePortalStore,
};

export const pgStores: Stores = {
  schedules: pgScheduleStore,
  enrollments: pgEnrollmentStore,
  monitors: pgMonitorStore,
  bankAccounts: pgBankAccountStore,
  rightsNotices: pgRightsNoticeStore,
  fraud: pgFraudStore,
  bankDataConnections: pgBankDataConnectionStore,
  payCycles: pgPayCycleStore,
  dispatch: pgDispatchStore,
  outcomes: pgOutcomeStore,
  matching: pgMatchingStore,
  decisions: pgDecisionStore,
  paymentReads: pgPaymentReadStore,
  collectionPolicy: pgCollectionPolicyStore,
  balances: pgBalanceStore,
  linkHealth: pgLinkHealthStore,
  lenders: pgLenderStore,
  returnRates: pgReturnRateStore,
  achReport: pgAchReportStore,
  uploads: pgUploadStore,
  paymentConnections: pgPaymentConnectionStore,
  feeds: pgFeedStore,
  webhooks: pgWebhookStore,
  portal: pgPortalStore,
};
