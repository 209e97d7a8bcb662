import { Elysia } from 'elysia';
import { join } from 'node:path';
import type { Deps } from '../../deps';
import { balanceCheckPages } from './pages/balance-checks';
import { bankAccountPages } from './pages/bank-accounts';
import { borrowerPages } from './pages/borrowers';
import { connectionPages } from './pages/connections';
import { bankDataPages } from './pages/bank-data';
import { developerPages } from './pages/developers';
import { fraudAlertPages } from './pages/fraud-alerts';
import { monitoringPages } from './pages/monitoring';
import { overviewPages } from './pages/overview';
import { paymentPages } from './pages/payments';
import { resultsUploadPages } from './pages/results-upload';
import { rulesPages } from './pages/rules';
import { signInPages } from './pages/sign-in';

// The lender portal: one file per page in ./pages, each built from the same services as the API (no rule is
// written twice), behind the signed-in session of ./plugin; the stylesheets served from the container.

const PICO = join(import.meta.dir, '../../../node_modules/@picocss/pico/css/pico.classless.min.css');
const PORTAL_CSS = join(import.meta.dir, 'assets/portal.css');
const FAVICON = join(import.meta.dir, 'assets/favicon.svg');
const svg = () => new Response(Bun.file(FAVICON), { headers: { 'content-type': 'image/svg+xml', 'cache-control': 'public, max-age=86400' } });
const css = (path: string) => () => new Response(Bun.file(path), { headers: { 'content-type': 'text/css; charset=utf-8', 'cache-control': 'public, max-age=86400' } });

export const portalRoutes = (deps: Deps) =>
  new Elysia({ name: 'portal' })
    .get('/portal/assets/pico.css', css(PICO), { detail: { hide: true } })
    .get('/portal/assets/portal.css', css(PORTAL_CSS), { detail: { hide: true } })
    .get('/portal/assets/favicon.svg', svg, { detail: { hide: true } })
    // Browsers ask for /favicon.ico whatever the page says: the same icon.
    .get('/favicon.ico', svg, { detail: { hide: true } })
    .use(signInPages(deps))
    .use(overviewPages(deps))
    .use(balanceCheckPages(deps))
    .use(monitoringPages(deps))
    .use(borrowerPages(deps))
    .use(paymentPages(deps))
    .use(bankAccountPages(deps))
    .use(fraudAlertPages(deps))
    .use(connectionPages(deps))
    .use(bankDataPages(deps))
    .use(resultsUploadPages(deps))
    .use(rulesPages(deps))
    .use(developerPages(deps));
