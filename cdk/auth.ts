/**
 * Who may call the HTTP API, decided at the gateway: by default a Cognito user pool the stack
 * creates (an app client for the CLI and scripts, and the groups `admin` and `system` that
 * lib/http/auth.ts maps to admin and system rights), or an existing JWT issuer given by
 * `jwtIssuer` / `jwtAudience`. Either way the HTTP API's JWT authorizer verifies the token and
 * the control function reads the verified claims (jwtClaimsAuth).
 */
import { Duration, Lazy, RemovalPolicy } from 'aws-cdk-lib';
import { HttpJwtAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import {
  AccountRecovery,
  FeaturePlan,
  Mfa,
  OAuthScope,
  UserPool,
  type UserPoolClient,
  UserPoolClientIdentityProvider,
  UserPoolGroup,
} from 'aws-cdk-lib/aws-cognito';
import { Construct } from 'constructs';
import { CALLER_GROUPS } from '../lib/http/auth.ts';
import { acknowledge } from './nag.ts';

export interface ApiAuthProps {
  /** An existing issuer (with `jwtAudience`); without it the stack creates a Cognito user pool. */
  readonly jwtIssuer?: string | undefined;
  readonly jwtAudience?: readonly string[] | undefined;
  /** What happens to the user pool when it leaves the stack (RETAIN also turns deletion protection on). */
  readonly removalPolicy: RemovalPolicy;
}

/** How long the tokens the app client issues are valid. */
export const TOKEN_VALIDITY = {
  access: Duration.hours(1),
  id: Duration.hours(1),
  refresh: Duration.days(30),
};

/** What the web console needs to sign in through a hosted UI (cdk/stack.ts `ConsoleOAuthProps`). */
export interface HostedConsoleSignIn {
  readonly issuer: string;
  readonly domainUrl: string;
  readonly clientId: string;
  readonly scopes: readonly string[];
}

/** The authorizer of the API, and the user pool and client when the stack created them. */
export class ApiAuth extends Construct {
  readonly authorizer: HttpJwtAuthorizer;
  readonly issuer: string;
  readonly audience: readonly string[];
  readonly userPool: UserPool | undefined;
  readonly userPoolClient: UserPoolClient | undefined;
  /** What the authorizer accepts: `audience`, then the console's client once added. */
  private readonly accepted: string[];

  /** Throws if exactly one of jwtIssuer / jwtAudience is given, or jwtAudience is empty. */
  constructor(scope: Construct, id: string, props: ApiAuthProps) {
    super(scope, id);
    const external = externalIssuer(props);
    if (external !== null) {
      this.issuer = external.issuer;
      this.audience = external.audience;
      this.userPool = undefined;
      this.userPoolClient = undefined;
    } else {
      const { userPool, client } = this.createUserPool(props.removalPolicy);
      this.userPool = userPool;
      this.userPoolClient = client;
      this.issuer = userPool.userPoolProviderUrl;
      this.audience = [client.userPoolClientId];
    }
    this.accepted = [...this.audience];
    this.authorizer = new HttpJwtAuthorizer('JwtAuthorizer', this.issuer, {
      // Lazy: the console's client, made once the API (its callback URL) exists, joins it.
      jwtAudience: Lazy.list({ produce: () => this.accepted }),
      identitySource: ['$request.header.Authorization'],
    });
  }

  /**
   * Gives the user pool the stack created a Cognito hosted UI at
   * `https://{domainPrefix}.auth.{region}.amazoncognito.com` and a public app client for the web
   * console (authorization code flow, which the console runs with PKCE; callback
   * `{apiEndpoint}/console/callback`, sign-out back to `{apiEndpoint}/console/`), whose access
   * tokens the API accepts. Throws when the stack uses an existing issuer (no user pool here).
   */
  addConsoleSignIn(apiEndpoint: string, domainPrefix: string): HostedConsoleSignIn {
    if (this.userPool === undefined) {
      throw new Error('consoleDomainPrefix needs the user pool the stack creates (not jwtIssuer)');
    }
    const domain = this.userPool.addDomain('ConsoleDomain', { cognitoDomain: { domainPrefix } });
    const scopes = [OAuthScope.OPENID, OAuthScope.EMAIL, OAuthScope.PROFILE];
    const client = this.userPool.addClient('ConsoleClient', {
      generateSecret: false,
      authFlows: { userSrp: true },
      oAuth: {
        flows: { authorizationCodeGrant: true },
        scopes,
        callbackUrls: [`${apiEndpoint}/console/callback`],
        logoutUrls: [`${apiEndpoint}/console/`],
      },
      supportedIdentityProviders: [UserPoolClientIdentityProvider.COGNITO],
      preventUserExistenceErrors: true,
      accessTokenValidity: TOKEN_VALIDITY.access,
      idTokenValidity: TOKEN_VALIDITY.id,
      refreshTokenValidity: TOKEN_VALIDITY.refresh,
      enableTokenRevocation: true,
    });
    this.accepted.push(client.userPoolClientId);
    return {
      issuer: this.issuer,
      domainUrl: domain.baseUrl(),
      clientId: client.userPoolClientId,
      scopes: scopes.map((s) => s.scopeName),
    };
  }

  /**
   * A user pool without self sign-up (an administrator creates users), signing in by email,
   * with the groups CALLER_GROUPS and one public app client (no secret) allowed the password
   * and SRP flows, so `aws cognito-idp initiate-auth` returns tokens. Access tokens carry
   * `client_id` and ID tokens `aud`, both the client id the authorizer accepts.
   */
  private createUserPool(removalPolicy: RemovalPolicy): { userPool: UserPool; client: UserPoolClient } {
    const userPool = new UserPool(this, 'UserPool', {
      selfSignUpEnabled: false,
      signInAliases: { email: true },
      signInCaseSensitive: false,
      autoVerify: { email: true },
      passwordPolicy: {
        minLength: 12,
        requireLowercase: true,
        requireUppercase: true,
        requireDigits: true,
        requireSymbols: true,
        tempPasswordValidity: Duration.days(3),
      },
      mfa: Mfa.OPTIONAL,
      mfaSecondFactor: { otp: true, sms: false },
      accountRecovery: AccountRecovery.EMAIL_ONLY,
      featurePlan: FeaturePlan.ESSENTIALS,
      deletionProtection: removalPolicy === RemovalPolicy.RETAIN,
      removalPolicy,
    });
    acknowledge(
      userPool,
      'AwsSolutions-COG2',
      'MFA is optional (TOTP) so that the first administrator can sign in from the command line right after deploy; require it for people by enrolling them, or give an existing issuer (jwtIssuer) that enforces it.',
    );
    for (const rule of ['AwsSolutions-COG3', 'AwsSolutions-COG8']) {
      acknowledge(
        userPool,
        rule,
        'Threat protection needs the Cognito Plus feature plan, a per-user cost the stack does not impose by default; deployments that need it can switch the plan.',
      );
    }
    for (const [role, groupName] of Object.entries(CALLER_GROUPS)) {
      new UserPoolGroup(this, `${capitalize(role)}Group`, {
        userPool,
        groupName,
        description:
          role === 'system'
            ? 'System callers: act with system rights on every run (lib/http/auth.ts).'
            : 'Administrators: may register reducer artifacts (PUT /functions/...).',
      });
    }
    const client = userPool.addClient('CliClient', {
      generateSecret: false,
      authFlows: { userPassword: true, userSrp: true },
      preventUserExistenceErrors: true,
      accessTokenValidity: TOKEN_VALIDITY.access,
      idTokenValidity: TOKEN_VALIDITY.id,
      refreshTokenValidity: TOKEN_VALIDITY.refresh,
      enableTokenRevocation: true,
    });
    return { userPool, client };
  }
}

function externalIssuer(props: ApiAuthProps): { issuer: string; audience: string[] } | null {
  const { jwtIssuer, jwtAudience } = props;
  if (jwtIssuer === undefined && jwtAudience === undefined) return null;
  if (jwtIssuer === undefined || jwtAudience === undefined || jwtAudience.length === 0) {
    throw new Error('jwtIssuer and a non-empty jwtAudience must be given together');
  }
  return { issuer: jwtIssuer, audience: [...jwtAudience] };
}

function capitalize(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}
