import { Elysia } from 'elysia';
import { maturity } from '../../http/maturity';
import type { Deps } from '../../deps';
import { errors } from '../../http/errors';
import type { Auth } from '../../http/auth';
import { BankAccountList, BankAccountListQuery, BankAccountParams, BankAccountView } from './model';
import { getBankAccount, listBankAccounts } from './service';

const tags = ['Payments'];
const early = (description: string) => maturity('Early Access', description);

export const bankAccountRoutes = (deps: Deps, auth: Auth) =>
  new Elysia({ prefix: '/v1/bank_accounts', normalize: false })
    .use(auth)
    .get('', ({ lender, query }) => listBankAccounts({ ctx: { lender, deps }, input: query }), {
      auth: true,
      query: BankAccountListQuery,
      response: { 200: BankAccountList, ...errors(400, 401, 429) },
      detail: {
        tags,
        summary: 'List bank accounts',
        ...early(
          'The ACH accounts the lender’s borrowers are enrolled with, one per routing and account number, by id, ' +
            'optionally of one state; paginated. A return of any borrower’s debit sets an account’s state, and while it ' +
            'is not ok no payment is made or sent to it for any borrower on it. Never the account number or its fingerprint.',
        ),
      },
    })
    .get('/:id', ({ lender, params }) => getBankAccount({ ctx: { lender, deps }, input: { id: params.id } }), {
      auth: true,
      params: BankAccountParams,
      response: { 200: BankAccountView, ...errors(400, 401, 404, 429) },
      detail: {
        tags,
        summary: 'Read a bank account',
        ...early('Its state, what set it, its validation evidence, its latest Notifications of Change (the first 20, newest first) and the borrowers on it (the first 20). Another lender’s account is 404.'),
      },
    });
