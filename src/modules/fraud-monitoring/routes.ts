import { Elysia } from 'elysia';
import { maturity } from '../../http/maturity';
import type { Deps } from '../../deps';
import { errors } from '../../http/errors';
import { schemaBody } from '../../http/body';
import type { Auth } from '../../http/auth';
import { csvDownload, wantsCsv } from '../../platform/csv';
import {
  FraudAlert,
  FraudAlertList,
  FraudAlertParams,
  FraudAlertQuery,
  FraudDispositionInput,
  FraudPolicyPut,
  FraudPolicyView,
  FraudReport,
  FraudReportQuery,
  Review,
  ReviewInput,
  ReviewList,
  ReviewListQuery,
  RuleCatalogue,
} from './model';
import { fraudReport, listReviews, recordReview, reportCsv, reportFilename, type FraudReportView } from './report';
import { disposeAlert, getAlert, getFraudPolicy, keyActor, listAlerts, putFraudPolicy, ruleCatalogue } from './service';

/** The report as its CSV file, named for its year. */
const csvAnswer = (report: FraudReportView) => csvDownload(reportCsv(report), reportFilename(report.year));

const tags = ['Fraud monitoring'];
const early = (description: string) => maturity('Early Access', description);

export const fraudRoutes = (deps: Deps, auth: Auth) =>
  new Elysia({ prefix: '/v1', normalize: false })
    .use(auth)
    .get('/fraud_monitoring/rules', () => ruleCatalogue(), {
      auth: true,
      response: { 200: RuleCatalogue, ...errors(401, 429) },
      detail: {
        tags,
        summary: 'The fraud-monitoring rules',
        ...early(
          'Every rule the service evaluates (Nacha’s fraud-monitoring rule for non-consumer Originators): its id, version, ' +
            'what it catches and why, where it is evaluated, the actions it may take and its settings with their defaults ' +
            'and bounds. The lender’s policy turns each on or off and sets it within these bounds.',
        ),
      },
    })
    .get('/fraud_monitoring/policy', ({ lender }) => getFraudPolicy({ ctx: { lender, deps } }), {
      auth: true,
      response: { 200: FraudPolicyView, ...errors(401, 429) },
      detail: {
        tags,
        summary: 'The fraud-monitoring policy',
        ...early('The version in force: every rule on with its defaults (version 0) until the lender saves one.'),
      },
    })
    .put('/fraud_monitoring/policy', ({ lender, body }) => putFraudPolicy({ ctx: { lender, deps }, input: { body, actor: keyActor(lender.keyId) } }), {
      auth: true,
      ...schemaBody(FraudPolicyPut),
      response: { 200: FraudPolicyView, ...errors(400, 401, 413, 415, 429) },
      detail: {
        tags,
        summary: 'Save a new version of the fraud-monitoring policy',
        ...early(
          'The whole document: each rule named takes what it gives (enabled, action, settings), the rest of it its ' +
            'defaults; a rule not named is on with its defaults; notes absent are none. Saved as the next version with ' +
            'who (changed_by, else the API key’s id) and when; earlier versions are kept (the yearly report lists them). ' +
            'An action the rule does not take, an unknown setting or a value out of its bounds is 400, naming the field.',
        ),
      },
    })
    .get('/fraud_alerts', ({ lender, query }) => listAlerts({ ctx: { lender, deps }, input: query }), {
      auth: true,
      query: FraudAlertQuery,
      response: { 200: FraudAlertList, ...errors(400, 401, 429) },
      detail: {
        tags,
        summary: 'List fraud alerts',
        ...early('The lender’s fraud alerts, newest first, paginated; by rule, state, borrower (authorizer_unique_id) and bank account.'),
      },
    })
    .get('/fraud_alerts/:id', ({ lender, params }) => getAlert({ ctx: { lender, deps }, input: { id: params.id } }), {
      auth: true,
      params: FraudAlertParams,
      response: { 200: FraudAlert, ...errors(401, 404, 429) },
      detail: { tags, summary: 'A fraud alert', ...early('One alert with every disposition; another lender’s or an unknown one is 404.') },
    })
    .post(
      '/fraud_alerts/:id/disposition',
      ({ lender, params, body }) => disposeAlert({ ctx: { lender, deps }, input: { id: params.id, body, actor: keyActor(lender.keyId) } }),
      {
        auth: true,
        params: FraudAlertParams,
        ...schemaBody(FraudDispositionInput),
        response: { 200: FraudAlert, ...errors(400, 401, 404, 409, 413, 415, 429) },
        detail: {
          tags,
          summary: 'Dispose of a fraud alert',
          ...early(
            'Recorded for good with a note and who (disposed_by, else the API key’s id). cleared: a hold lifts and the held ' +
              'debit goes out. confirmed_fraud: the alert’s bank account is frozen for every borrower on it, as a return ' +
              'freezing it would, and no payment not yet sent to it goes out. Both are final: a second is 409. needs_info ' +
              'keeps the alert open (a hold stays) and may come before the final one.',
          ),
        },
      },
    )
    .post(
      '/fraud_monitoring/reviews',
      async ({ lender, body, set }) => {
        const review = await recordReview({ ctx: { lender, deps }, input: body });
        set.status = 201;
        return review;
      },
      {
        auth: true,
        ...schemaBody(ReviewInput),
        response: { 201: Review, ...errors(400, 401, 413, 415, 429) },
        detail: {
          tags,
          summary: 'Record a review of the fraud-monitoring process',
          ...early(
            'Nacha asks for the process to be reviewed at least once a year: the day (not after today, UTC), who reviewed ' +
              'it, notes, and the policy version reviewed (one the lender has; 0 is the defaults). Kept for good (201).',
          ),
        },
      },
    )
    .get('/fraud_monitoring/reviews', ({ lender, query }) => listReviews({ ctx: { lender, deps }, input: query }), {
      auth: true,
      query: ReviewListQuery,
      response: { 200: ReviewList, ...errors(400, 401, 429) },
      detail: { tags, summary: 'List the reviews of the fraud-monitoring process', ...early('The lender’s reviews, the latest first, paginated.') },
    })
    .get(
      '/fraud_monitoring/report',
      ({ lender, query, set }) => {
        // One address, two forms: caches keep each apart.
        set.headers.vary = 'Accept';
        return fraudReport({ ctx: { lender, deps }, input: { year: query.year } });
      },
      {
        auth: true,
        query: FraudReportQuery,
        // The report, checked against its schema, is the JSON; asked for as CSV, it is written as the file instead.
        mapResponse: ({ query, request, responseValue, set }) =>
          set.status === 200 && wantsCsv(query.format, request.headers.get('accept')) ? csvAnswer(responseValue as FraudReportView) : undefined,
        response: { 200: FraudReport, ...errors(400, 401, 429) },
        detail: {
          tags,
          summary: 'The yearly fraud-monitoring report',
          ...early(
            'What an ODFI or processor asks an Originator to show for a calendar year (UTC): the policy versions in force, ' +
              'the reviews, the alerts raised by rule and by state, the holds, the bank accounts frozen on confirmed fraud, ' +
              'and each month’s unauthorized return rate. year is YYYY, the current year (so far) or an earlier one: ' +
              'another value is 400. JSON by default; CSV (one line per figure: section,item,key,value) with format=csv or ' +
              'Accept: text/csv.',
          ),
          // The CSV beside the JSON the schema gives (http/openapi-document.ts adds it to the document).
          responses: {
            200: {
              description: 'The report: JSON, or CSV with format=csv or Accept: text/csv',
              headers: { 'Content-Disposition': { description: 'The CSV only: attachment; filename=fraud-monitoring-report-<year>.csv', schema: { type: 'string' } } },
              content: { 'text/csv': { schema: { type: 'string' }, example: reportCsv(FraudReport.examples![0] as FraudReportView) } },
            },
          },
        },
      },
    );
