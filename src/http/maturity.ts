// An operation's maturity, shown the same way everywhere: the `x-maturity` extension of the OpenAPI document
// and the first words of its description. Operations without one are General Availability.

export type Maturity = 'General Availability' | 'Early Access' | 'In Development';

export const maturity = (level: Maturity, description: string) => ({ 'x-maturity': level, description: `**${level}.** ${description}` });
