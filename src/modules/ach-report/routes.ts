import { Elysia } from 'elysia';
import type { Deps } from '../../deps';
import type { Auth } from '../../http/auth';
import { errors } from '../../http/errors';
import { maturity } from '../../http/maturity';
import { reportCsv, reportFilename, wantsCsv } from './csv';
import { csvDownload } from '../../platform/csv';
import { ACH_REPORT_EXAMPLE, AchReport, AchReportQuery } from './model';
import { achReport, type AchReportView } from './service';

/** The report as its CSV file, named for its month. */
const csvAnswer = (report: AchReportView) => csvDownload(reportCsv(report), reportFilename(report.month));

export const achReportRoutes = (deps: Deps, auth: Auth) =>
  new Elysia({ prefix: '/v1/reports', normalize: false }).use(auth).get(
    '/ach',
    ({ lender, query, set }) => {
      // One address, two forms: caches keep each apart.
      set.headers.vary = 'Accept';
      return achReport({ ctx: { lender, deps }, input: { month: query.month } });
    },
    {
      auth: true,
      query: AchReportQuery,
      // The report, checked against its schema, is the JSON; asked for as CSV, it is written as the file instead.
      // An error is answered as every error is (this runs for its envelope too).
      mapResponse: ({ query, request, responseValue, set }) =>
        set.status === 200 && wantsCsv(query.format, request.headers.get('accept')) ? csvAnswer(responseValue as AchReportView) : undefined,
      response: { 200: AchReport, ...errors(400, 401, 429) },
      detail: {
        tags: ['Payments'],
        summary: 'Monthly ACH report',
        ...maturity(
          'Early Access',
          'The figures a bank (the ODFI) asks of an Originator, for the lender and one calendar month (UTC): its ACH ' +
            'debits that went to the bank (count and total, counted as GET /v1/return_rates counts them); the returns ' +
            'whose return date is in the month, by code and by class (unauthorized, administrative, overall) with each ' +
            'class’s rate over the month’s debits; the Notifications of Change received in the month, by code, status ' +
            'and timeliness, and the first 1,000 listed with the banking days each took to apply and whether it was ' +
            'applied by its due day; and the bank accounts whose blocking state was set in the month, by state. month ' +
            'is YYYY-MM, the current month (its figures so far) or an earlier one: another value, or a later month, is ' +
            '400. JSON by default; CSV (one line per figure: section,item,key,value) with format=csv or Accept: text/csv.',
        ),
        // The CSV beside the JSON the schema gives (http/openapi-document.ts adds it to the document).
        responses: {
          200: {
            description: 'The report: JSON, or CSV with format=csv or Accept: text/csv',
            headers: { 'Content-Disposition': { description: 'The CSV only: attachment; filename=ach-report-<month>.csv', schema: { type: 'string' } } },
            content: { 'text/csv': { schema: { type: 'string' }, example: reportCsv(ACH_REPORT_EXAMPLE as AchReportView) } },
          },
        },
      },
    },
  );
